//! Every "what to do" of the Kubernetes error catalogue that a test can carry out, carried out.
//!
//! Each row makes a catalogued failure happen through the hook that raises it, checks that the
//! message is the catalogued one (`error_catalog::explain` names the row's code), then applies
//! the fix the entry documents (`fix` in `crates/error-catalog/src/kubernetes.rs`, as
//! `docs/errors.md` and the troubleshooting table of `docs/operators.md` show it) and shows the
//! error gone: the config validates, the probe passes, the lease is acquired, the sync or the
//! command goes through.
//!
//! The rows are keyed by catalogue code. Every Kubernetes code is either covered by a row here
//! or listed in [`NOT_EXERCISED`] with the reason its fix cannot be carried out in a test (a
//! plugin defect, a text never raised, a cluster fault the emulator cannot make, a success
//! text); `every_kubernetes_code_is_exercised_or_has_a_reason` fails for a code in neither, so a
//! new catalogue entry must be classified here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use emulator::kubernetes::{DenyRule, KubeEmulatorOptions, KubernetesEmulator};
use kubernetes::{KubernetesProvider, validate_config};
use sandbox_core::recording_sink::RecordingSink;
use sandbox_core::{HostSink, LogLevel, NullSink, ProviderResult};
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/login.rs"]
mod login_support;
use login_support::{ChannelSink, Terminal};

/// The tenant namespace of company `acme`.
const NS: &str = "paperclip-acme";
/// A valid image reference for `adapters[]` entries.
const IMAGE: &str = "ghcr.io/acme/claude-runtime:1.2";

/// Codes whose fix no test here carries out, each with the reason.
const NOT_EXERCISED: &[(&str, &str)] = &[
    (
        "K8S_CONFIG_URL_INVALID",
        "not raised by the current schema (imageRegistry has its own check, K8S_CONFIG_IMAGE_REGISTRY_INVALID)",
    ),
    (
        "K8S_POD_IMAGE_PULL_FAILED",
        "needs a kubelet that pulls images; the real-node suite shows the message",
    ),
    (
        "K8S_POD_CONTAINER_CRASHING",
        "needs a kubelet that restarts a crashing container; the real-node suite shows the message",
    ),
    (
        "K8S_POD_CONTAINER_CREATE_FAILED",
        "needs a kubelet that cannot create the container; the readiness tests show the message",
    ),
    (
        "K8S_POD_UNSCHEDULABLE",
        "needs a scheduler; the real-node suite shows the message",
    ),
    (
        "K8S_SANDBOX_NO_CONTROLLER",
        "needs the agent-sandbox controller stopped; its fix is to start it (the real-node suite)",
    ),
    (
        "K8S_PROBE_PERMISSIONS_UNCHECKED",
        "needs an API server that refuses access reviews, which every authenticated user may create",
    ),
    (
        "K8S_PROBE_SANDBOX_API_UNKNOWN",
        "needs discovery to fail, which every authenticated user may read",
    ),
    (
        "K8S_PROBE_TENANT_NAMESPACE_TERMINATING",
        "needs a namespace held in deletion by a finalizer; the fix is to wait",
    ),
    (
        "K8S_PROBE_PERMISSIONS_GRANTED",
        "a success text: nothing to fix (the probe rows see it after their fixes)",
    ),
    (
        "K8S_PROBE_RUNTIME_IMAGE_VALID",
        "a success text: nothing to fix",
    ),
    (
        "K8S_PROBE_SANDBOX_API_NOT_USED",
        "a success text: nothing to fix",
    ),
    (
        "K8S_PROBE_SANDBOX_API_SERVED",
        "a success text: nothing to fix (the sandbox-api row sees it after its fix)",
    ),
    (
        "K8S_PROBE_TENANT_NAMESPACE_CREATABLE",
        "a success text: nothing to fix (the probe rows see it after their fixes)",
    ),
    (
        "K8S_PROBE_TENANT_NAMESPACE_EXISTS",
        "a success text: nothing to fix",
    ),
    (
        "K8S_STREAM_EXEC_CLOSED",
        "needs an exec connection cut in the middle of a transfer; emulator_sync_cut cuts one and then syncs again, the fix",
    ),
    (
        "K8S_ACQUIRE_CREATE_UNCONFIRMED",
        "needs a create and the lookup after it to fail; emulator_unconfirmed_create raises it and carries out its fix (deleting the named Sandbox)",
    ),
    (
        "K8S_EXEC_CONNECTION_CLOSED",
        "needs an exec connection cut while the command runs; emulator_exec_faults cuts one, and its fix (run the command again once the cluster answers) is the next execute there",
    ),
    (
        "K8S_EXEC_REFUSED",
        "needs an exec upgrade refused while the pod runs; emulator_exec_faults refuses one, and its fix (the cause the API server names) is the next execute there",
    ),
    (
        "K8S_EXEC_UNREACHABLE",
        "needs an exec upgrade that gets no answer; emulator_exec_faults drops one, and its fix (run it again once the API server answers) is the next execute there",
    ),
    (
        "K8S_EXEC_POD_DELETED_NOTE",
        "needs the pod deleted under a command by a kubelet that kills it; the real-node suite (real_cluster pod_deleted) shows the note and its fix, the next execute on the new pod",
    ),
    (
        "K8S_RESUME_LEFT_COMMANDS_ENDED",
        "a worker-log line of a resume after a dead worker; the real-node suite (real_cluster left_commands) shows it, and it needs no fix",
    ),
    (
        "K8S_RESUME_LEFT_COMMANDS_NOT_ENDED",
        "needs the resume's kill exec to fail while the resume succeeds; its fix (release the lease) is any release",
    ),
    (
        "K8S_EXECUTE_CANCELLED",
        "raised only while the worker shuts down; emulator_shutdown raises it, and its fix (run it again on the next worker) is any execute",
    ),
    (
        "K8S_SYNC_CANCELLED",
        "raised only while the worker shuts down; emulator_shutdown raises it, and its fix (sync again on the next worker) is any sync",
    ),
    (
        "K8S_SYNC_POD_UNRESOLVED",
        "needs a Sandbox Ready without any pod, which no controller reports; the fix is a fresh lease",
    ),
    (
        "K8S_IMAGE_OVERRIDE_NOT_ALLOWED",
        "not raised by the hooks (acquire passes no override); resolve_image's unit tests hold the allow-list",
    ),
    (
        "K8S_HARD_STOP_DEADLINE_INVALID",
        "a defensive check of a value acquire always computes; no input makes it fail",
    ),
    (
        "K8S_JOB_TIMEOUT",
        "caught by execute and never shown; its fix (a longer timeout) is K8S_EXEC_TIMEOUT's",
    ),
    (
        "K8S_JOB_UID_MISSING",
        "needs an API server that drops metadata.uid from a create response",
    ),
    (
        "K8S_SANDBOX_UID_MISSING",
        "needs an API server that drops metadata.uid from a create response",
    ),
    (
        "K8S_SANDBOX_READY_TIMEOUT",
        "the readiness wait's failures are the readiness helper's (issue #37 item 2) tests",
    ),
    (
        "K8S_SANDBOX_FAILED",
        "the readiness wait's failures are the readiness helper's (issue #37 item 2) tests",
    ),
    (
        "K8S_SANDBOX_TERMINATING",
        "an outcome, not a fault: the lease's Sandbox is being deleted; the fix is a fresh lease",
    ),
    (
        "K8S_EGRESS_POLICY_AND_RELEASE_FAILED",
        "needs a policy create and the workload release to fail while the cleanup's delete of the same workload succeeds",
    ),
    (
        "K8S_LOGIN_PTY_LEASE_EXPIRED",
        "needs a bounded lease past its deadline, at least 30 s after it is acquired",
    ),
    (
        "K8S_LOGIN_PTY_GLOBAL_LIMIT",
        "16 live terminals; the limit itself is the login manager's tests",
    ),
    (
        "K8S_LOGIN_PTY_COMPANY_LIMIT",
        "the limit itself is the login manager's tests; closing a session frees a place as K8S_LOGIN_PTY_ROUTE_OPEN's row shows",
    ),
    (
        "K8S_LOGIN_PTY_OPEN_CANCELLED",
        "a race between an open and a close; the fix is to open again",
    ),
    (
        "K8S_LOGIN_PTY_LEASE_ID_MISSING",
        "a plugin defect: the session manager always supplies a lease id",
    ),
    (
        "K8S_LOGIN_PTY_POD_UNAVAILABLE",
        "needs a Sandbox Ready without any pod, which no controller reports",
    ),
    (
        "K8S_EXEC_STDOUT_CAP",
        "not raised by the hooks (they pass no cap)",
    ),
    (
        "K8S_EXEC_STDERR_CAP",
        "not raised by the hooks (they pass no cap)",
    ),
    (
        "K8S_SYNC_OUTPUT_GUARD",
        "needs more than 8 GiB streamed out of a pod",
    ),
    (
        "K8S_SYNC_OUT_LISTING_UNPARSEABLE",
        "needs a device node in the pod, which an unprivileged container cannot make; emulator_sync's scripted archive covers the message",
    ),
    (
        "K8S_SYNC_OUT_SYMLINK_UNPARSEABLE",
        "not raised by this implementation",
    ),
    (
        "K8S_SYNC_OUT_HARDLINK_UNPARSEABLE",
        "not raised by this implementation",
    ),
    (
        "K8S_SYNC_OUT_MEMBER_ESCAPES",
        "needs a forged archive (GNU tar never writes such a member); emulator_sync's scripted archives cover the message",
    ),
    (
        "K8S_SYNC_OUT_EXTENDED_HEADER_TOO_LARGE",
        "needs a forged archive; the confined extraction's tests cover the message",
    ),
    (
        "K8S_POD_NOT_EXECUTABLE",
        "not raised by the hooks (library routine not wired in)",
    ),
    (
        "K8S_SANDBOX_API_VERSION_UNSUPPORTED",
        "needs an agent-sandbox group serving neither v1beta1 nor v1alpha1; the discovery unit tests cover the message",
    ),
    (
        "K8S_REPO_URL_INVALID",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_REPO_URL_NOT_APPROVED",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_REPO_TARGET_NOT_ALLOWED",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_REPO_URL_MISSING",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_REPO_REVISION_INVALID",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_REPO_CREDENTIAL_BINDING_MISSING",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_REPO_GIT_PREPARATION_FAILED",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_REPO_HEAD_MISMATCH",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_REPO_CHECKOUT_DIRTY",
        "not raised by the hooks (sandbox-repository realization is not wired in)",
    ),
    (
        "K8S_EXECUTE_POD_READY_TIMEOUT",
        "the readiness wait's failures are the readiness helper's (issue #37 item 2) tests",
    ),
    (
        "K8S_EXECUTE_POD_NAME_UNRESOLVED",
        "needs a Sandbox Ready without any pod, which no controller reports",
    ),
    (
        "K8S_FAST_UPLOAD_FLUSH_FAILED",
        "needs the exec of a flush to drop; its fix (retry) is the upload protocol's",
    ),
    (
        "K8S_NETWORK_EGRESS_DENIED_HINT",
        "the emulator's pods have no network to deny; the fix changes a NetworkPolicy only a CNI enforces",
    ),
    (
        "K8S_RESUME_SANDBOX_GONE",
        "an outcome, not a fault: nothing to repair, the host acquires a fresh lease",
    ),
    (
        "K8S_RESUME_NO_BACKING_POD",
        "an outcome, not a fault: nothing to repair, the host acquires a fresh lease",
    ),
    (
        "K8S_RESUME_POD_GONE",
        "an outcome, not a fault: nothing to repair, the host acquires a fresh lease",
    ),
    (
        "K8S_RESUME_POD_NOT_RUNNING",
        "an outcome, not a fault: nothing to repair, the host acquires a fresh lease",
    ),
    (
        "K8S_RESUME_JOB_GONE",
        "an outcome, not a fault: nothing to repair, the host acquires a fresh lease",
    ),
    (
        "K8S_RESUME_JOB_FINISHED",
        "an outcome, not a fault: nothing to repair, the host acquires a fresh lease",
    ),
    (
        "K8S_FAST_UPLOAD_BUFFER_CAP",
        "never shown: the command runs as asked",
    ),
    (
        "K8S_SYNC_SCRIPT_NO_CANONICALIZER",
        "needs an image without realpath and readlink; the preamble's unit test covers exit 40",
    ),
    (
        "K8S_SYNC_SCRIPT_ROOT_UNRESOLVED",
        "needs a lease whose workspace dir vanished from the pod; the fix is a fresh lease",
    ),
    (
        "K8S_SYNC_SCRIPT_EXTRACT_FAILED",
        "needs a full disk or an image without tar",
    ),
    (
        "K8S_SYNC_SCRIPT_SNAPSHOT_COPY_FAILED",
        "needs a full disk or an unreadable file; the emulator's containers run as the test's user",
    ),
    (
        "K8S_SYNC_SCRIPT_TAR_FAILED",
        "needs an image whose tar refuses --no-xattrs; the real node's BusyBox image is what found it",
    ),
    (
        "K8S_SYNC_SCRIPT_REPLACED",
        "a race: the file changes between the script's check and its open",
    ),
    (
        "K8S_SYNC_SCRIPT_RENAME_FAILED",
        "needs a read-only or replaced target directory between the script's checks",
    ),
    (
        "K8S_SYNC_SCRIPT_STAGE_MKDIR_FAILED",
        "needs a full or read-only workspace",
    ),
    (
        "K8S_SYNC_SCRIPT_MKDIR_FAILED",
        "needs a read-only workspace or a file in the way (the emulator's workspace is writable)",
    ),
    (
        "K8S_SYNC_SCRIPT_OPEN_FAILED",
        "needs a directory that vanishes between the script's checks",
    ),
    ("K8S_SYNC_SCRIPT_CD_FAILED", "needs a pod without /proc"),
    (
        "K8S_SYNC_SCRIPT_CHMOD_FAILED",
        "needs a file the container user does not own, which the script's own stage never holds",
    ),
    (
        "K8S_CONFIG_INVALID_INPUT",
        "not reachable with the schema (no unions)",
    ),
    (
        "K8S_EXIT_137_NOTE",
        "the emulator enforces no memory limit; raising one is a cluster's",
    ),
    (
        "K8S_EXIT_143_NOTE",
        "an outcome (the pod was stopped): the fix is a fresh lease",
    ),
    ("K8S_PROBE_REACHABLE", "a success text: nothing to fix"),
    ("K8S_HEALTHY", "a success text: nothing to fix"),
    (
        "K8S_API_REQUIRED_PARAMETER",
        "needs lease metadata without a namespace, which the provider never writes; the fix is to use the lease as returned",
    ),
    (
        "K8S_API_UNKNOWN_STATUS",
        "needs an API server answering a nonstandard HTTP status without a message",
    ),
    (
        "K8S_SYNC_TAR_FAILED",
        "needs a host tar that fails (an unreadable source is refused by Node's fs checks first)",
    ),
    (
        "K8S_API_TIMEOUT",
        "its fix is the API server's health; emulator_bounds holds the bound itself",
    ),
];

// ---- what the rows share -----------------------------------------------------------------------

/// The catalogue code that explains `message`.
fn code_of(message: &str) -> &'static str {
    error_catalog::explain(message).map_or("(not catalogued)", |e| e.code)
}

#[track_caller]
fn assert_code(code: &str, message: &str) {
    assert_eq!(code_of(message), code, "{message}");
}

/// The rejection message of a hook that must fail.
#[track_caller]
fn rejected<T: std::fmt::Debug>(result: ProviderResult<T>) -> String {
    match result {
        Ok(value) => panic!("expected a rejection, got {value:?}"),
        Err(err) => err.message,
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// An ISO 8601 timestamp `secs` from now (UTC, milliseconds), as `Date#toISOString` writes it.
fn iso_in(secs: u64) -> String {
    let ms = now_ms() + u128::from(secs) * 1000;
    js_date_iso(ms)
}

fn js_date_iso(ms: u128) -> String {
    let secs = (ms / 1000) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

// ---- config rows: validation --------------------------------------------------------------------

/// A config that fails validation with `code`, and the same config with the entry's fix applied.
struct ConfigFix {
    code: &'static str,
    broken: Value,
    fixed: Value,
}

/// A valid config (Cilium egress, so that validation has no warning) with `extra` over it.
fn cfg(extra: Value) -> Value {
    let mut config = json!({"inCluster": true, "egressMode": "cilium"});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    config
}

fn config_fixes() -> Vec<ConfigFix> {
    let row = |code, broken, fixed| ConfigFix {
        code,
        broken,
        fixed,
    };
    vec![
        // "Set `kubeconfig` … or `inCluster: true` when Paperclip runs in the cluster."
        row(
            "K8S_CONFIG_AUTH_MISSING",
            json!({"kubeconfig": "", "egressMode": "cilium"}),
            cfg(json!({})),
        ),
        // "Write entries as IPv4 CIDRs such as … `203.0.113.7/32`."
        row(
            "K8S_CONFIG_CIDR_INVALID",
            cfg(json!({"egressAllowCidrs": ["203.0.113.7"]})),
            cfg(json!({"egressAllowCidrs": ["203.0.113.7/32"]})),
        ),
        // "Use valid label keys such as `app` or `app.kubernetes.io/name`."
        row(
            "K8S_CONFIG_SELECTOR_KEY_INVALID",
            cfg(json!({"paperclipServerPodSelector": {"-app": "paperclip-server"}})),
            cfg(
                json!({"paperclipServerPodSelector": {"app.kubernetes.io/name": "paperclip-server"}}),
            ),
        ),
        // "Use values of at most 63 characters of letters, digits, `-`, `_` and `.` …"
        row(
            "K8S_CONFIG_SELECTOR_VALUE_INVALID",
            cfg(json!({"paperclipServerPodSelector": {"app": "paperclip server"}})),
            cfg(json!({"paperclipServerPodSelector": {"app": "paperclip-server"}})),
        ),
        // "Remove the key to use the default …"
        row(
            "K8S_CONFIG_SELECTOR_EMPTY",
            cfg(json!({"paperclipServerPodSelector": {}})),
            cfg(json!({})),
        ),
        // "Set `adapterType` to claude_local, … (or remove it)."
        row(
            "K8S_CONFIG_ADAPTER_TYPE_UNKNOWN",
            cfg(json!({"adapterType": "claude"})),
            cfg(json!({"adapterType": "claude_local"})),
        ),
        // "Use lower-case letters, digits and `-` only, at most 32 characters."
        row(
            "K8S_CONFIG_PATTERN_MISMATCH",
            cfg(json!({"companySlug": "Acme_Corp"})),
            cfg(json!({"companySlug": "acme-corp"})),
        ),
        // "… numbers and booleans unquoted …"
        row(
            "K8S_CONFIG_TYPE_MISMATCH",
            cfg(json!({"podActivityDeadlineSec": "3600"})),
            cfg(json!({"podActivityDeadlineSec": 3600})),
        ),
        // "Store the environment config as a JSON object."
        row(
            "K8S_CONFIG_NOT_OBJECT",
            json!(r#"{"inCluster": true, "egressMode": "cilium"}"#),
            cfg(json!({})),
        ),
        // "Use a whole number of seconds."
        row(
            "K8S_CONFIG_NOT_INTEGER",
            cfg(json!({"podActivityDeadlineSec": 3600.5})),
            cfg(json!({"podActivityDeadlineSec": 3600})),
        ),
        // "Use 0 or more seconds (default 900), or remove the key."
        row(
            "K8S_CONFIG_NEGATIVE",
            cfg(json!({"jobTtlSecondsAfterFinished": -1})),
            cfg(json!({"jobTtlSecondsAfterFinished": 0})),
        ),
        // "Use a positive number of seconds (default 3600), or remove the key."
        row(
            "K8S_CONFIG_NOT_POSITIVE",
            cfg(json!({"podActivityDeadlineSec": 0})),
            cfg(json!({"podActivityDeadlineSec": 3600})),
        ),
        // "Set `egressMode` to `standard` … or `cilium` …"
        row(
            "K8S_CONFIG_EGRESS_MODE_INVALID",
            cfg(json!({"egressMode": "Cilium"})),
            cfg(json!({"egressMode": "cilium"})),
        ),
        // "Set `backend` to `sandbox-cr` (the default …)."
        row(
            "K8S_CONFIG_BACKEND_INVALID",
            cfg(json!({"backend": "sandbox"})),
            cfg(json!({"backend": "sandbox-cr"})),
        ),
        // "Give every `adapters[]` entry a non-empty `adapterType`."
        row(
            "K8S_CONFIG_STRING_EMPTY",
            cfg(json!({"adapters": [{"adapterType": "", "runtimeImage": IMAGE}]})),
            cfg(json!({"adapters": [{"adapterType": "claude_local", "runtimeImage": IMAGE}]})),
        ),
        // "Remove or rename the listed keys in the `adapters[]` entry."
        row(
            "K8S_CONFIG_UNRECOGNIZED_KEYS",
            cfg(json!({"adapters": [{"adapterType": "claude_local", "image": IMAGE}]})),
            cfg(json!({"adapters": [{"adapterType": "claude_local", "runtimeImage": IMAGE}]})),
        ),
        // "Write booleans unquoted: `true` or `false`."
        row(
            "K8S_CONFIG_BOOLEAN_AS_STRING",
            cfg(json!({"inCluster": "true"})),
            cfg(json!({})),
        ),
        // "Add `adapterType` to every `adapters[]` entry."
        row(
            "K8S_CONFIG_REQUIRED",
            cfg(json!({"adapters": [{"runtimeImage": IMAGE}]})),
            cfg(json!({"adapters": [{"adapterType": "claude_local", "runtimeImage": IMAGE}]})),
        ),
        // "Set `backend: \"sandbox-cr\"` …"
        row(
            "K8S_JOB_BACKEND_NO_LOGIN_PTY",
            cfg(json!({"backend": "job"})),
            cfg(json!({"backend": "sandbox-cr"})),
        ),
        // "Add `runtimeImage` … to that `adapters[]` entry."
        row(
            "K8S_ADAPTER_RUNTIME_IMAGE_MISSING",
            cfg(json!({"adapters": [{"adapterType": "claude_local"}]})),
            cfg(json!({"adapters": [{"adapterType": "claude_local", "runtimeImage": IMAGE}]})),
        ),
        // "Add an `adapters[]` entry (with `runtimeImage`) for the named adapter type …"
        row(
            "K8S_ADAPTER_NOT_IN_REGISTRY",
            cfg(json!({"adapters": [{"adapterType": "codex_local", "runtimeImage": IMAGE}]})),
            cfg(
                json!({"adapters": [{"adapterType": "codex_local", "runtimeImage": IMAGE}, {"adapterType": "claude_local", "runtimeImage": IMAGE}]}),
            ),
        ),
        // "… switch to `egressMode: \"cilium\"` (Cilium CNI) for exact FQDN rules …"
        row(
            "K8S_EGRESS_FQDN_FALLBACK_PUBLIC",
            cfg(json!({"egressMode": "standard"})),
            cfg(json!({"egressMode": "cilium"})),
        ),
        // "Write the registry host and optional path, e.g. `ghcr.io/acme` …"
        row(
            "K8S_CONFIG_IMAGE_REGISTRY_INVALID",
            cfg(json!({"imageRegistry": "acme"})),
            cfg(json!({"imageRegistry": "ghcr.io/acme"})),
        ),
        // "… or switch to `egressMode: \"cilium\"`."
        row(
            "K8S_EGRESS_FQDN_CIDR_ONLY",
            cfg(json!({"egressMode": "standard", "egressAllowCidrs": ["203.0.113.0/24"]})),
            cfg(json!({"egressAllowCidrs": ["203.0.113.0/24"]})),
        ),
    ]
}

/// Every message validation gives for `config`: its errors, its warnings, or its rejection.
fn validation_messages(config: &Value) -> (bool, Vec<String>) {
    match validate_config(&json!({ "config": config })) {
        Err(err) => (false, vec![err.message]),
        Ok(value) => {
            let value = value.into_value();
            let texts = |key: &str| -> Vec<String> {
                value[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m.as_str().map(str::to_string))
                    .collect()
            };
            let mut messages = texts("errors");
            messages.extend(texts("warnings"));
            (value["ok"] == true, messages)
        }
    }
}

#[test]
fn documented_config_fixes_make_validation_pass() {
    let mut failures = Vec::new();
    for row in config_fixes() {
        let (_, broken) = validation_messages(&row.broken);
        if !broken.iter().any(|m| code_of(m) == row.code) {
            failures.push(format!("{}: the broken config gave {broken:?}", row.code));
            continue;
        }
        let (ok, fixed) = validation_messages(&row.fixed);
        if !ok || !fixed.is_empty() {
            failures.push(format!(
                "{}: after the fix, ok={ok} with {fixed:?}",
                row.code
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---- emulator rows -------------------------------------------------------------------------------

/// The rows run against the emulator, each with the codes whose fix it carries out.
const EMULATOR_ROWS: &[(&str, &[&str])] = &[
    (
        "credentials",
        &[
            "K8S_KUBECONFIG_MISSING",
            "K8S_KUBECONFIG_TOKEN_INVALID",
            "K8S_KUBECONFIG_YAML_INVALID",
            "K8S_CONFIG_INVALID",
            "K8S_CLUSTER_PROBE_FAILED",
        ],
    ),
    (
        "deadlines",
        &[
            "K8S_JOB_DEADLINE_UNSUPPORTED",
            "K8S_LEASE_DEADLINE_INVALID",
            "K8S_LEASE_DEADLINE_TOO_CLOSE",
        ],
    ),
    (
        "adapter",
        &["K8S_ADAPTER_UNKNOWN", "K8S_RUNTIME_IMAGE_INVALID"],
    ),
    (
        "rbac",
        &[
            "K8S_API_HTTP_ERROR",
            "K8S_ACQUIRE_CLEANUP_INCOMPLETE",
            "K8S_LEASE_DELETE_FAILED",
        ],
    ),
    (
        "egress-log",
        &[
            "K8S_EGRESS_FQDN_FALLBACK_PUBLIC_LOG",
            "K8S_EGRESS_FQDN_CIDR_ONLY_LOG",
        ],
    ),
    (
        "sync-lease",
        &[
            "K8S_SYNC_BACKEND_UNSUPPORTED",
            "K8S_SYNC_REMOTE_DIR_MISSING",
            "K8S_SYNC_LEASE_ID_MISSING",
            "K8S_SYNC_PATH_NOT_CONFINED",
            "K8S_SYNC_PATH_ESCAPES_WORKSPACE",
        ],
    ),
    (
        "sync-pod",
        &[
            "K8S_SYNC_TRANSFER_FAILED",
            "K8S_SYNC_SCRIPT_ESCAPE",
            "K8S_SYNC_SCRIPT_NOT_REGULAR",
            "K8S_SYNC_OUT_LINK_ESCAPES",
        ],
    ),
    (
        "sync-host",
        &[
            "K8S_SYNC_SOURCE_REPEATED_DIRECTORY",
            "K8S_SYNC_SOURCE_IS_DIRECTORY",
            "K8S_SYNC_OUT_THROUGH_SYMLINK",
        ],
    ),
    (
        "post-upload",
        &[
            "K8S_POST_UPLOAD_COMMAND_FAILED",
            "K8S_STREAM_EXEC_STDERR_CAP",
            "K8S_STREAM_EXEC_TIMEOUT",
        ],
    ),
    ("execute", &["K8S_EXECUTE_NO_LEASE_ID", "K8S_EXEC_TIMEOUT"]),
    (
        "sandbox-api",
        &[
            "K8S_SANDBOX_API_NOT_SERVED",
            "K8S_PROBE_SANDBOX_API_NOT_INSTALLED",
        ],
    ),
    (
        "probe-checks",
        &[
            "K8S_PROBE_CHECKS_FAILED",
            "K8S_PROBE_PERMISSIONS_PARTLY_GRANTED",
            "K8S_PROBE_PERMISSION_MISSING",
            "K8S_PROBE_TENANT_NAMESPACE_NOT_CREATABLE",
            "K8S_PROBE_TENANT_NAMESPACE_UNREADABLE",
        ],
    ),
    ("lease-end", &["K8S_LEASE_END_NOT_MOVED"]),
    (
        "login",
        &[
            "K8S_LOGIN_PTY_DESCRIPTOR_REJECTED",
            "K8S_LOGIN_PTY_LEASE_MISMATCH",
            "K8S_LOGIN_PTY_ROUTE_OPEN",
            "K8S_LOGIN_PTY_INPUT_TOO_LARGE",
        ],
    ),
];

#[path = "catalogue_fixes/rows.rs"]
mod rows;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documented_fixes_clear_their_errors_on_the_emulator() {
    let emu = Arc::new(rows::start(KubeEmulatorOptions::for_tests()).await);
    let mut failures = Vec::new();
    // One row at a time (the RBAC row changes the emulator's rules); a failing row is reported
    // with the others instead of stopping them.
    for (row, codes) in EMULATOR_ROWS {
        let shared = emu.clone();
        let run = tokio::spawn(async move { rows::run(row, &shared).await });
        if let Err(err) = run.await {
            let why = err
                .try_into_panic()
                .ok()
                .and_then(|p| {
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                })
                .unwrap_or_else(|| "cancelled".into());
            failures.push(format!("row {row} ({}): {why}", codes.join(", ")));
        }
        emu.clear_deny();
    }
    if failures.is_empty() {
        rows::until_nothing_left(&emu).await;
    }
    Arc::try_unwrap(emu)
        .ok()
        .expect("rows hold no emulator")
        .shutdown()
        .await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---- the classification --------------------------------------------------------------------------

#[test]
fn every_kubernetes_code_is_exercised_or_has_a_reason() {
    let catalogue: BTreeSet<&str> =
        error_catalog::provider_entries(error_catalog::Provider::Kubernetes)
            .iter()
            .map(|e| e.code)
            .collect();
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    let mut duplicates = Vec::new();
    let config = config_fixes();
    let classified = config
        .iter()
        .map(|r| (r.code, "a config row"))
        .chain(
            EMULATOR_ROWS
                .iter()
                .flat_map(|(row, codes)| codes.iter().map(move |c| (*c, *row))),
        )
        .chain(NOT_EXERCISED.iter().map(|(c, _)| (*c, "NOT_EXERCISED")));
    for (code, place) in classified {
        if let Some(first) = seen.insert(code, place) {
            duplicates.push(format!("{code} ({first} and {place})"));
        }
    }
    let unknown: Vec<&&str> = seen.keys().filter(|c| !catalogue.contains(*c)).collect();
    let missing: Vec<&&str> = catalogue
        .iter()
        .filter(|c| !seen.contains_key(*c))
        .collect();
    assert!(
        duplicates.is_empty() && unknown.is_empty() && missing.is_empty(),
        "classify every Kubernetes catalogue code once: a row that applies its fix, or \
         NOT_EXERCISED with the reason.\nmissing: {missing:?}\nnot in the catalogue: \
         {unknown:?}\ntwice: {duplicates:?}"
    );
}

#[test]
fn iso_timestamps_are_written_as_javascript_does() {
    assert_eq!(js_date_iso(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(js_date_iso(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
    assert_eq!(js_date_iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
}
