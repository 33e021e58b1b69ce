//! Running commands in the agent pod.

pub mod command;
pub mod transport;
pub mod tty;
pub mod upload_interceptor;

pub use transport::{
    AGENT_CONTAINER, ExecError, ExecOutput, ExecRequest, OutputTap, StreamingIo, StreamingOutput,
    exec_in_pod, exec_in_pod_streaming,
};
