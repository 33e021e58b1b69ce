//! What the API answers about a sandbox: the vendor's `SandboxView` (get, list, patch, pause,
//! resume, fork) and `CreateSandboxResponse` (create). Optional fields are omitted when absent,
//! never `null`, as the real server does (`omitempty`).

use std::time::SystemTime;

use serde_json::{Map, Value, json};

use super::catalog::ShapeSpec;
use super::lifecycle::Status;
use super::state::{Sandbox, SandboxInfo};
use super::util::rfc3339;

impl Sandbox {
    /// The `SandboxView` now.
    pub fn view(&self) -> Value {
        let mut info = self.info.lock().unwrap();
        let status = info.lifecycle.current();
        self.view_of(&info, status)
    }

    /// The `SandboxView` a destroyed sandbox keeps (its tombstone): no address any more.
    pub fn destroyed_view(&self, at: SystemTime) -> Value {
        let info = self.info.lock().unwrap();
        let mut view = self.view_of(&info, Status::Destroyed);
        view.as_object_mut().map(|v| v.remove("ip"));
        view["destroyed_at"] = json!(rfc3339(at));
        view
    }

    /// The `CreateSandboxResponse` of a create that has reached `running`.
    pub fn create_response(&self) -> Value {
        let info = self.info.lock().unwrap();
        let spec = ShapeSpec::of(&info.shape);
        json!({
            "id": self.id,
            "name": info.name,
            "ip": self.ip(),
            "shape": info.shape,
            "rootfs": info.rootfs,
            "vcpu": spec.vcpu,
            "mem_mib": spec.mem_mib,
            "disk_mib": info.disk_mib,
            "spawn_ms": info.spawn_ms,
            "egress": info.egress,
            "bandwidth_quota_bytes": info.bandwidth_quota_bytes,
        })
    }

    /// A private address, unique per emulator (from the creation order).
    fn ip(&self) -> String {
        let n = self.seq + 2;
        format!("10.{}.{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
    }

    fn view_of(&self, info: &SandboxInfo, status: Status) -> Value {
        let spec = ShapeSpec::of(&info.shape);
        let mut view = Map::new();
        let mut put = |key: &str, value: Value| {
            view.insert(key.to_string(), value);
        };
        put("id", json!(self.id));
        put("status", json!(status.as_str()));
        if !matches!(
            status,
            Status::Creating | Status::Failed | Status::Destroyed
        ) {
            put("ip", json!(self.ip()));
        }
        put("vcpu", json!(spec.vcpu));
        put("mem_mib", json!(spec.mem_mib));
        put("disk_mib", json!(info.disk_mib));
        put("created_at", json!(rfc3339(info.created_at)));
        put("ingress_enabled", json!(info.ingress_enabled));
        put("name", json!(info.name));
        put("spawn_ms", json!(info.spawn_ms));
        put("shape", json!(info.shape));
        put("rootfs", json!(info.rootfs));
        if let Some(region) = &info.region {
            put("region", json!(region));
        }
        put("egress", json!(info.egress));
        if !info.envs.is_empty() {
            let names: Vec<&str> = info.envs.iter().map(|(k, _)| k.as_str()).collect();
            put("envs", json!(names));
        }
        if !info.ssh_pubkeys.is_empty() {
            put("ssh_pubkeys", json!(info.ssh_pubkeys));
        }
        put("created_by", json!(self.owner.id()));
        if let Some(source) = &info.forked_from {
            put("forked_from", json!(source));
        }
        if let Some(seconds) = info.auto_pause_after_seconds {
            put("auto_pause_after_seconds", json!(seconds));
        }
        Value::Object(view)
    }
}
