//! The in-worker lease state the original keeps in module scope: the leases whose
//! Sandbox this worker has seen Ready (execute and sync skip the readiness wait for them), and
//! the fast-upload interceptor of each lease. Release, destroy and shutdown forget them.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::exec::upload_interceptor::{FastUploadInterceptor, UploadDecision};

/// `readySandboxesByLease`: leases whose Sandbox was seen Ready by this worker. Beside it (issue
/// #38), the `uid` of the lease's pod as an execute last read it, so that a pod replaced by one
/// of the same name is told apart ([`crate::cluster::pod_fate`]).
#[derive(Debug, Default)]
pub struct ReadySet {
    leases: Mutex<HashSet<String>>,
    pod_uids: Mutex<HashMap<String, String>>,
}

impl ReadySet {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn contains(&self, lease: &str) -> bool {
        self.lock().contains(lease)
    }

    pub fn insert(&self, lease: &str) {
        self.lock().insert(lease.to_string());
    }

    pub fn remove(&self, lease: &str) {
        self.lock().remove(lease);
    }

    pub fn clear(&self) {
        self.lock().clear();
        self.uids().clear();
    }

    fn uids(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.pod_uids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The `uid` the lease's pod was last read with, if any.
    pub fn pod_uid(&self, lease: &str) -> Option<String> {
        self.uids().get(lease).cloned()
    }

    /// Records (or, with `None`, forgets) the `uid` of the lease's pod.
    pub fn set_pod_uid(&self, lease: &str, uid: Option<String>) {
        match uid {
            Some(uid) => self.uids().insert(lease.to_string(), uid),
            None => self.uids().remove(lease),
        };
    }

    /// Forgets the lease altogether: its ready mark and its pod's `uid` (release, destroy).
    pub fn forget(&self, lease: &str) {
        self.remove(lease);
        self.uids().remove(lease);
    }
}

/// `uploadInterceptorsByLease`: one fast-upload interceptor per lease, created on first use.
#[derive(Debug, Default)]
pub struct UploadInterceptors {
    leases: Mutex<HashMap<String, FastUploadInterceptor>>,
}

impl UploadInterceptors {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, FastUploadInterceptor>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lease's interceptor's decision on `script`.
    pub fn decide(&self, lease: &str, script: &str) -> UploadDecision {
        self.lock()
            .entry(lease.to_string())
            .or_default()
            .decide(script)
    }

    pub fn remove(&self, lease: &str) {
        self.lock().remove(lease);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    pub fn contains(&self, lease: &str) -> bool {
        self.lock().contains_key(lease)
    }
}
