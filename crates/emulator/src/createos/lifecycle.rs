//! The sandbox status machine. Transitional states (`creating`, `forking`, `pausing`,
//! `resuming`) last a configurable time and are advanced lazily whenever the status is read,
//! so no timers are needed and tests observe exactly what a poller would.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Creating,
    Forking,
    Running,
    Pausing,
    Paused,
    Resuming,
    Error,
    Failed,
    Destroyed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Creating => "creating",
            Status::Forking => "forking",
            Status::Running => "running",
            Status::Pausing => "pausing",
            Status::Paused => "paused",
            Status::Resuming => "resuming",
            Status::Error => "error",
            Status::Failed => "failed",
            Status::Destroyed => "destroyed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        [
            Status::Creating,
            Status::Forking,
            Status::Running,
            Status::Pausing,
            Status::Paused,
            Status::Resuming,
            Status::Error,
            Status::Failed,
            Status::Destroyed,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    /// Whether processes of a sandbox in this state are frozen (SIGSTOP).
    pub fn frozen(self) -> bool {
        matches!(self, Status::Pausing | Status::Paused)
    }
}

#[derive(Debug)]
pub struct Lifecycle {
    status: Status,
    pending: Option<(Instant, Status)>,
}

impl Lifecycle {
    /// Starts in `transitional` and becomes `target` after `delay`.
    pub fn starting(transitional: Status, target: Status, delay: Duration) -> Self {
        let mut l = Lifecycle {
            status: transitional,
            pending: None,
        };
        l.begin(transitional, target, delay);
        l
    }

    /// The status now, completing a finished transition.
    pub fn current(&mut self) -> Status {
        if let Some((at, target)) = self.pending
            && Instant::now() >= at
        {
            self.status = target;
            self.pending = None;
        }
        self.status
    }

    pub fn begin(&mut self, transitional: Status, target: Status, delay: Duration) {
        if delay.is_zero() {
            self.status = target;
            self.pending = None;
        } else {
            self.status = transitional;
            self.pending = Some((Instant::now() + delay, target));
        }
    }

    /// Sets a state immediately (control API), cancelling any transition in flight.
    pub fn force(&mut self, status: Status) {
        self.status = status;
        self.pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_delay_transitions_complete_at_once() {
        let mut l = Lifecycle::starting(Status::Creating, Status::Running, Duration::ZERO);
        assert_eq!(l.current(), Status::Running);
        l.begin(Status::Pausing, Status::Paused, Duration::from_secs(3600));
        assert_eq!(l.current(), Status::Pausing);
        l.force(Status::Error);
        assert_eq!(l.current(), Status::Error);
    }
}
