//! Native file sync (`file-sync.ts`, streaming variant): one streaming
//! exec per file batch and per directory mapping, raw tar bytes both ways, host and in-pod
//! confinement to the workspace remote dir, post-upload commands after each syncIn operation.
//! The hooks that call it are in [`crate::hooks::sync`].

pub mod engine;
pub mod paths;
pub mod script;
mod stream;
pub mod tar_list;

pub use engine::{
    MAX_SYNC_OUTPUT_BYTES, SYNC_STDERR_CAP_BYTES, SyncMapping, SyncOperation, SyncTarget,
    perform_sync_in, perform_sync_out,
};
