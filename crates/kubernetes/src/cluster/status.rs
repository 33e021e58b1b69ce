//! `SandboxStatus`: the workload state both backends report, in Job terms.

use serde_json::{Map, Value, json};

/// `SandboxStatus.phase`. A Sandbox CR that is up reports `Running`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl WorkloadPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadPhase::Pending => "Pending",
            WorkloadPhase::Running => "Running",
            WorkloadPhase::Succeeded => "Succeeded",
            WorkloadPhase::Failed => "Failed",
        }
    }

    /// A Job that has finished, one way or the other.
    pub fn is_terminal(self) -> bool {
        matches!(self, WorkloadPhase::Succeeded | WorkloadPhase::Failed)
    }
}

/// `{phase, complete, active, succeeded, failed, reason?, message?}`.
///
/// The counters and the condition texts are kept as the API server sent them (JSON values):
/// the original copies them through unchecked, and a `null` reason is emitted as `null` while a
/// missing one is left out.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxStatus {
    pub phase: WorkloadPhase,
    pub complete: bool,
    pub active: Value,
    pub succeeded: Value,
    pub failed: Value,
    /// `None` when no condition supplied one (the key is then absent).
    pub reason: Option<Value>,
    /// `None` when no condition supplied one (the key is then absent).
    pub message: Option<Value>,
}

impl SandboxStatus {
    /// A status with numeric counters and no reason or message.
    pub fn counted(phase: WorkloadPhase, active: u8, succeeded: u8, failed: u8) -> Self {
        Self {
            phase,
            complete: false,
            active: json!(active),
            succeeded: json!(succeeded),
            failed: json!(failed),
            reason: None,
            message: None,
        }
    }

    /// The reason, unless it is missing or `null` (`status.reason ?? fallback`).
    pub fn reason_value(&self) -> Option<&Value> {
        self.reason.as_ref().filter(|v| !v.is_null())
    }

    /// The message, unless it is missing or `null`.
    pub fn message_value(&self) -> Option<&Value> {
        self.message.as_ref().filter(|v| !v.is_null())
    }

    /// The JSON the original resolves with, keys in its order.
    pub fn to_json(&self) -> Value {
        let mut status = Map::new();
        status.insert("phase".into(), json!(self.phase.as_str()));
        status.insert("complete".into(), json!(self.complete));
        status.insert("active".into(), self.active.clone());
        status.insert("succeeded".into(), self.succeeded.clone());
        status.insert("failed".into(), self.failed.clone());
        if let Some(reason) = &self.reason {
            status.insert("reason".into(), reason.clone());
        }
        if let Some(message) = &self.message {
            status.insert("message".into(), message.clone());
        }
        Value::Object(status)
    }
}
