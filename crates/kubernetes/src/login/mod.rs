//! Login terminals (G-login, spec §11.13 and §18): the per-worker manager of login-PTY
//! sessions, the connector that opens them as tty execs in the lease's Sandbox pod, and the
//! `onLoginPty*` hooks.

pub mod connector;
pub mod hooks;
pub mod manager;

pub use connector::KubeLoginConnector;
pub use manager::{LoginConnection, LoginConnector, LoginIo, LoginLeaseScope, LoginPtyManager};
