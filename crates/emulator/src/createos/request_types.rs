//! The request bodies the API accepts, one constant per type, named after the vendor's type:
//! the field lists of `@nodeops-createos/sandbox@0.7.1`'s `dist/types.d.ts` (whose wire types
//! its maintainers check against the live control plane), and for the managed-process bodies,
//! which 0.7.1 does not model, the later `src/types.ts` of NodeOps-app/createos-sandbox-sdk.
//!
//! Every JSON body is parsed through [`parse`], which refuses a field its type does not define
//! (400, the JSend `fail` the API uses for bad bodies, naming the field). Whether the real
//! server refuses or drops such a field is undocumented; refusing makes a client that sends one
//! fail in tests instead of in production. The lists are the one place the emulator knows the
//! fields: `GET /_emulator/request-types` serves them, and the vendor conformance suite checks
//! them against `types.d.ts`, so they cannot drift from the vendor's types.

use serde_json::{Map, Value, json};

use super::envelope::{ApiError, json_object};

/// A request body type: its vendor name and every field it defines.
pub struct RequestType {
    pub name: &'static str,
    pub fields: &'static [&'static str],
}

/// `POST /v1/sandboxes`.
pub const CREATE_SANDBOX_REQUEST: RequestType = RequestType {
    name: "CreateSandboxRequest",
    fields: &[
        "shape",
        "rootfs",
        "name",
        "networks",
        "disk_mib",
        "egress",
        "envs",
        "ssh_pubkeys",
        "host_id",
        "node_selector",
        "ingress_enabled",
        "disks",
        "region",
        "auto_pause_after_seconds",
    ],
};

/// `POST /v1/sandboxes/{id}/fork`.
pub const FORK_SANDBOX_REQUEST: RequestType = RequestType {
    name: "ForkSandboxRequest",
    fields: &[
        "start_paused",
        "ssh_pubkeys",
        "egress",
        "ingress_enabled",
        "envs",
        "bandwidth_quota_bytes",
    ],
};

/// `PATCH /v1/sandboxes/{id}`.
pub const PATCH_SANDBOX_REQUEST: RequestType = RequestType {
    name: "PatchSandboxRequest",
    fields: &[
        "ingress_enabled",
        "auto_pause_after_seconds",
        "disable_auto_pause",
    ],
};

/// `PUT /v1/sandboxes/{id}/egress`.
pub const SET_EGRESS_REQUEST: RequestType = RequestType {
    name: "SetEgressRequest",
    fields: &["egress"],
};

/// `POST /v1/sandboxes/{id}/exec`: no `stdin`, no `env`, no `cwd` (the SDK notes the control
/// plane has no stdin field and overwrites env with the sandbox's own `envs`).
pub const EXEC_REQUEST: RequestType = RequestType {
    name: "ExecRequest",
    fields: &["cmd", "args", "stream"],
};

/// `POST /v1/sandboxes/{id}/processes` (later SDK revision, not 0.7.1).
pub const MANAGED_PROCESS_CREATE_REQUEST: RequestType = RequestType {
    name: "ManagedProcessCreateRequest",
    fields: &["cmd", "args", "cwd", "env", "pty"],
};

/// `POST …/processes/{pid}/input` (later SDK revision, not 0.7.1).
pub const MANAGED_PROCESS_INPUT_REQUEST: RequestType = RequestType {
    name: "ManagedProcessInputRequest",
    fields: &["data_base64"],
};

/// `POST …/processes/{pid}/signal` (later SDK revision, not 0.7.1).
pub const MANAGED_PROCESS_SIGNAL_REQUEST: RequestType = RequestType {
    name: "ManagedProcessSignalRequest",
    fields: &["signal"],
};

/// `POST …/processes/{pid}/resize`: the SDKs' `PTYSize` (also `pty` of a process create).
pub const PTY_SIZE: RequestType = RequestType {
    name: "PTYSize",
    fields: &["rows", "cols"],
};

/// Every type, for the control API.
pub const ALL: &[&RequestType] = &[
    &CREATE_SANDBOX_REQUEST,
    &FORK_SANDBOX_REQUEST,
    &PATCH_SANDBOX_REQUEST,
    &SET_EGRESS_REQUEST,
    &EXEC_REQUEST,
    &MANAGED_PROCESS_CREATE_REQUEST,
    &MANAGED_PROCESS_INPUT_REQUEST,
    &MANAGED_PROCESS_SIGNAL_REQUEST,
    &PTY_SIZE,
];

/// Parses a JSON object body of type `ty` (empty = `{}`), refusing any field `ty` lacks.
pub fn parse(body: &[u8], ty: &RequestType) -> Result<Map<String, Value>, ApiError> {
    let map = json_object(body)?;
    check_fields(&map, ty)?;
    Ok(map)
}

/// 400 naming the first field of `map` (in key order) that `ty` does not define.
pub fn check_fields(map: &Map<String, Value>, ty: &RequestType) -> Result<(), ApiError> {
    match map.keys().find(|k| !ty.fields.contains(&k.as_str())) {
        None => Ok(()),
        Some(field) => Err(ApiError::unknown_field(field, ty.name)),
    }
}

/// `{"CreateSandboxRequest":["shape",…],…}` for `GET /_emulator/request-types`.
pub fn catalog() -> Value {
    let map: Map<String, Value> = ALL
        .iter()
        .map(|t| (t.name.to_string(), json!(t.fields)))
        .collect();
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_field_the_type_lacks_and_names_it() {
        assert!(parse(br#"{"shape":"s","name":"x"}"#, &CREATE_SANDBOX_REQUEST).is_ok());
        let err = parse(br#"{"shape":"s","labels":{}}"#, &CREATE_SANDBOX_REQUEST).unwrap_err();
        assert_eq!(err.status.as_u16(), 400);
        assert_eq!(err.field.as_deref(), Some("labels"));
        assert!(parse(br#"{"cmd":"x","stdin":"y"}"#, &EXEC_REQUEST).is_err());
        assert!(parse(b"", &SET_EGRESS_REQUEST).is_ok());
    }
}
