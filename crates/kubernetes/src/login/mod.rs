//! Login terminals (G-login): the per-worker manager of login-PTY
//! sessions and the connector that opens them as tty execs in the lease's Sandbox pod. The
//! `onLoginPty*` hooks that drive them are in [`crate::hooks::login`].

pub mod connector;
pub mod manager;

pub use connector::KubeLoginConnector;
pub use manager::{LoginConnection, LoginConnector, LoginIo, LoginLeaseScope, LoginPtyManager};
