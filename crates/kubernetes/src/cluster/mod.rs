//! The Kubernetes API as the orchestration code sees it: one trait with the calls the original
//! makes, request and response bodies as JSON, and API errors that keep their HTTP status.
//!
//! Keeping the cluster behind [`ClusterApi`] makes every orchestration function testable against
//! the golden recordings (`testing::ScriptedCluster`) and leaves the wire to one implementation
//! (kube-rs, issue 8).

mod api;
mod error;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use api::{ApiGroup, ApiMethod, ClusterApi};
pub use error::{ApiError, ApiResult, CONFLICT, NOT_FOUND};
