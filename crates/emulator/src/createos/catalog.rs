//! The catalogue endpoints, which the real server serves without an API key (the vendor's
//! client calls them with `auth: false`): `GET /healthz`, `GET /v1/shapes` (paginated) and
//! `GET /v1/rootfs` (not paginated: `RootfsData {rootfs, default, entries}`).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::{Value, json};

use super::envelope::{ApiError, ok};
use super::page::{PAGE_PARAMS, Page, query_pairs};
use super::state::App;

/// `(method, path)` of every route served without an API key.
const PUBLIC: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("GET", "/v1/shapes"),
    ("GET", "/v1/rootfs"),
];

pub fn is_public(method: &str, path: &str) -> bool {
    PUBLIC.iter().any(|(m, p)| *m == method && *p == path)
}

/// Overlay disk of every shape when a create omits `disk_mib`.
pub const DEFAULT_DISK_MIB: u64 = 10_240;

/// A shape's sizing, read from its id (`s-<vcpu>vcpu-<mem>mb|gb`): a fractional vCPU is one
/// vCPU with a `cpu_quota_pct`, as the vendor's `Shape` describes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShapeSpec {
    pub vcpu: u64,
    pub mem_mib: u64,
    pub cpu_quota_pct: Option<u64>,
}

impl ShapeSpec {
    pub fn of(shape: &str) -> ShapeSpec {
        let mut parts = shape.split('-').skip(1);
        let cpu: f64 = parts
            .next()
            .and_then(|c| c.strip_suffix("vcpu"))
            .and_then(|c| c.parse().ok())
            .unwrap_or(1.0);
        let mem_mib = parts
            .next()
            .and_then(|m| {
                let (n, unit) = m.split_at(m.find(|c: char| c.is_ascii_alphabetic())?);
                let n: u64 = n.parse().ok()?;
                match unit {
                    "mb" => Some(n),
                    "gb" => Some(n * 1024),
                    _ => None,
                }
            })
            .unwrap_or(1024);
        ShapeSpec {
            vcpu: cpu.ceil().max(1.0) as u64,
            mem_mib,
            cpu_quota_pct: (cpu.fract() > 0.0).then(|| (cpu * 100.0).round() as u64),
        }
    }

    fn view(self, id: &str) -> Value {
        let mut v = json!({
            "id": id,
            "vcpu": self.vcpu,
            "mem_mib": self.mem_mib,
            "default_disk_mib": DEFAULT_DISK_MIB,
        });
        if let Some(pct) = self.cpu_quota_pct {
            v["cpu_quota_pct"] = json!(pct);
        }
        v
    }
}

pub async fn healthz() -> Response {
    ok(json!({ "up": true }))
}

pub async fn shapes(
    State(app): State<Arc<App>>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let page = Page::from_pairs(
        &query_pairs(query.as_deref(), PAGE_PARAMS)?,
        app.settings.max_page_size(),
    )?;
    let all = app
        .opts
        .shapes
        .iter()
        .map(|id| ShapeSpec::of(id).view(id))
        .collect();
    Ok(ok(page.of(all)))
}

pub async fn rootfs(State(app): State<Arc<App>>) -> Response {
    let entries: Vec<Value> = app
        .opts
        .rootfs_catalog
        .iter()
        .map(|name| json!({ "name": name }))
        .collect();
    ok(json!({
        "rootfs": app.opts.rootfs_catalog,
        "default": app.opts.default_rootfs,
        "entries": entries,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_sized_from_their_ids() {
        let spec = ShapeSpec::of("s-0.25vcpu-512mb");
        assert_eq!(
            (spec.vcpu, spec.mem_mib, spec.cpu_quota_pct),
            (1, 512, Some(25))
        );
        let spec = ShapeSpec::of("s-8vcpu-16gb");
        assert_eq!(
            (spec.vcpu, spec.mem_mib, spec.cpu_quota_pct),
            (8, 16_384, None)
        );
        assert!(is_public("GET", "/v1/rootfs"));
        assert!(!is_public("POST", "/v1/rootfs"));
    }
}
