//! Native file sync (`file-sync.ts`, streaming variant): one streaming
//! exec per file batch and per directory mapping, raw tar bytes both ways, host and in-pod
//! confinement to the workspace remote dir, post-upload commands after each syncIn operation.
//! The hooks that call it are in [`crate::hooks::sync`].
//!
//! Inside, each module leans only on those after it: [`sync_in`] and [`sync_out`] (the two
//! directions), `stream` (one tar stream through an exec), `host` (host-side tar and
//! extraction), [`host_temp`] (the host temp dirs, and what removes them even when the worker
//! dies), [`target`] (the pod, the limits, what both directions report), [`operation`] (the
//! requested operations), and [`script`], [`tar_list`] and [`paths`] (the in-pod script,
//! archive member checks and path confinement).

mod host;
pub mod host_temp;
pub mod operation;
pub mod paths;
pub mod script;
mod stream;
pub mod sync_in;
pub mod sync_out;
pub mod tar_list;
pub mod target;

pub use operation::{PostUploadCommand, SyncMapping, SyncOperation};
pub use sync_in::perform_sync_in;
pub use sync_out::perform_sync_out;
pub use target::{MAX_SYNC_OUTPUT_BYTES, SCRATCH_PREFIX, SYNC_STDERR_CAP_BYTES, SyncTarget};
