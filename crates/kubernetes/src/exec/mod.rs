//! Running commands in the agent pod.

pub mod command;
pub mod exit_hints;
pub mod group;
pub mod pod_exec;
mod request;
mod tail;
pub mod transport;
pub mod tty;
pub mod upload_interceptor;
mod wire;

/// The crate's [`Error`](crate::Error) under the name the exec's callers and tests know it by.
pub use crate::error::Error as ExecError;
/// The least time an exec gets after the waits before it (the Sandbox readiness wait, the pod
/// lookup), however much of the hook's budget those took.
pub const EXEC_FLOOR_MS: u64 = 5_000;

pub use pod_exec::{PodExec, STREAMING_UNSUPPORTED};
pub use transport::{
    AGENT_CONTAINER, ExecOutput, ExecRequest, OUTPUT_TAP_CAPACITY, OutputTap, OutputTapReceiver,
    READ_CHUNK_BYTES, RESULT_TAIL_BYTES, StreamingIo, StreamingOutput, decode_output, exec_in_pod,
    exec_in_pod_streaming, output_tap,
};
