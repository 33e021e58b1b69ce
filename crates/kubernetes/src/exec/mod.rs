//! Running commands in the agent pod.

pub mod command;
pub mod exit_hints;
pub mod group;
mod tail;
pub mod transport;
pub mod tty;
pub mod upload_interceptor;

pub use transport::{
    AGENT_CONTAINER, ExecError, ExecOutput, ExecRequest, OUTPUT_TAP_CAPACITY, OutputTap,
    OutputTapReceiver, READ_CHUNK_BYTES, RESULT_TAIL_BYTES, StreamingIo, StreamingOutput,
    decode_output, exec_in_pod, exec_in_pod_streaming, output_tap,
};
