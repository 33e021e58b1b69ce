//! The controllers: garbage collection through ownerReferences (background and foreground),
//! the agent-sandbox controller (Sandbox → pod → Ready, or Failed / Terminating on request;
//! deleted at its `spec.shutdownTime` with `shutdownPolicy: Delete`),
//! and the Job controller (pod really runs its command; Succeeded / Failed with its exit code;
//! `backoffLimit`, `activeDeadlineSeconds`, `ttlSecondsAfterFinished`). Namespace termination
//! is part of deletion (`super::deletion`).
//!
//! Bottom to top: `fields` (object fields they share), `events` (waiting on the store),
//! `template` (a pod from a template); `expiry` (a Sandbox's own end); `gc`, `sandbox`, `job`
//! (one controller each); `dispatch`
//! (the event loop feeding them). This module only declares them and re-exports.

mod dispatch;
mod events;
mod expiry;
mod fields;
mod gc;
mod job;
mod sandbox;
mod template;

pub use dispatch::run;
pub use sandbox::apply_sandbox_plan;
