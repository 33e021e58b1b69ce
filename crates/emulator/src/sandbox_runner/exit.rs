//! How a sandboxed command ended, in the service's terms (exit code or signal name).

use nix::sys::signal::Signal;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::str::FromStr;

/// Exactly one of `code` and `signal` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

impl ExitInfo {
    /// Maps bwrap's status back to the command's.
    ///
    /// bwrap reports a command killed by signal N as exit code 128+N, exactly like a command
    /// that ran `exit 128+N`. We only call it a signal when the emulator itself delivered N to
    /// this command (`delivered`), or when bwrap itself was killed (the tree was torn down).
    pub fn from_bwrap(status: ExitStatus, delivered: Option<i32>) -> ExitInfo {
        if let Some(sig) = status.signal() {
            return ExitInfo::signalled(sig);
        }
        let code = status.code().unwrap_or(-1);
        match delivered {
            Some(sig) if code == 128 + sig => ExitInfo::signalled(sig),
            _ => ExitInfo {
                code: Some(code),
                signal: None,
            },
        }
    }

    fn signalled(sig: i32) -> ExitInfo {
        let name = Signal::try_from(sig)
            .map(|s| s.as_str().to_string())
            .unwrap_or_else(|_| format!("SIG{sig}"));
        ExitInfo {
            code: None,
            signal: Some(name),
        }
    }

    /// Shell-style status: the code, or 128 + signal number.
    pub fn shell_code(&self) -> i32 {
        match (&self.code, &self.signal) {
            (Some(code), _) => *code,
            (None, Some(name)) => 128 + signal_from_name(name).map(|s| s as i32).unwrap_or(0),
            (None, None) => -1,
        }
    }
}

/// Accepts `SIGTERM` and `TERM` spellings.
pub fn signal_from_name(name: &str) -> Option<Signal> {
    let full = if name.starts_with("SIG") {
        name.to_string()
    } else {
        format!("SIG{name}")
    };
    Signal::from_str(&full).ok()
}
