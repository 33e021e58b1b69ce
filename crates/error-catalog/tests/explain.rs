//! `explain` on real messages, with their interpolations filled in as the providers do.

use error_catalog::{Kind, Provider, by_code, candidates, explain};

fn code_of(message: &str) -> Option<&'static str> {
    explain(message).map(|e| e.code)
}

#[test]
fn fixed_createos_messages() {
    assert_eq!(
        code_of("CreateOS API URL is invalid."),
        Some("CREATEOS_API_URL_INVALID")
    );
    assert_eq!(
        code_of("CreateOS workspace requires a lease from this environment."),
        Some("CREATEOS_WORKSPACE_LEASE_MISMATCH")
    );
    assert_eq!(
        code_of("Invalid CreateOS configuration."),
        Some("CREATEOS_CONFIG_INVALID")
    );
}

#[test]
fn interpolated_createos_messages() {
    assert_eq!(
        code_of("shape must be a non-empty string."),
        Some("CREATEOS_CONFIG_TEXT_INVALID")
    );
    assert_eq!(
        code_of("CreateOS request failed (HTTP 502) during workspace command."),
        Some("CREATEOS_HTTP_ERROR")
    );
    assert_eq!(
        code_of("CreateOS sandbox did not reach running; provider state is failed."),
        Some("CREATEOS_SANDBOX_STATE_UNEXPECTED")
    );
    assert_eq!(
        code_of("CreateOS setup failed and cleanup is unconfirmed for sandbox sbx_01HZY."),
        Some("CREATEOS_SETUP_CLEANUP_UNCONFIRMED")
    );
    assert_eq!(
        code_of("CreateOS fork setup failed and cleanup is unconfirmed for sandbox sbx_01HZY."),
        Some("CREATEOS_FORK_CLEANUP_UNCONFIRMED")
    );
    assert_eq!(
        code_of("CreateOS can start from snapshot templates only, not image."),
        Some("CREATEOS_SOURCE_TEMPLATE_KIND_UNSUPPORTED")
    );
}

#[test]
fn interpolated_kubernetes_messages() {
    let cases = [
        (
            "Kubernetes file sync is only supported on the sandbox-cr backend (lease backend: job).",
            "K8S_SYNC_BACKEND_UNSUPPORTED",
        ),
        (
            "Requested lease deadline (\"not-a-date\") is not a valid ISO 8601 timestamp. Failing closed instead of silently substituting a default deadline the caller did not ask for.",
            "K8S_LEASE_DEADLINE_INVALID",
        ),
        (
            "Requested lease deadline (2020-01-01T00:00:00Z) is already past or too close (< 30s) to acquire a bounded lease. Failing closed instead of granting a near-expired lease.",
            "K8S_LEASE_DEADLINE_TOO_CLOSE",
        ),
        (
            "Adapter \"codex_local\" is not in the configured adapter registry",
            "K8S_ADAPTER_NOT_IN_REGISTRY",
        ),
        (
            "Sandbox paperclip-acme/pc-7f3a failed: ImagePullBackOff — Back-off pulling image \"ghcr.io/acme/x:1\"",
            "K8S_SANDBOX_FAILED",
        ),
        (
            "Sandbox paperclip-acme/pc-7f3a failed: unknown reason — ",
            "K8S_SANDBOX_FAILED",
        ),
        (
            "Sandbox paperclip-acme/pc-7f3a is Terminating — cannot wait for Ready",
            "K8S_SANDBOX_TERMINATING",
        ),
        (
            "execInPod timed out after 30000ms (pod=pc-7f3a-0, container=agent, cmd0=/bin/sh). The WebSocket likely dropped before the command produced a status frame.",
            "K8S_EXEC_TIMEOUT",
        ),
        (
            "Kubernetes syncIn file transfer failed (exit 42): ESCAPE",
            "K8S_SYNC_TRANSFER_FAILED",
        ),
        (
            "Kubernetes syncOut directory transfer failed (exit 43)",
            "K8S_SYNC_TRANSFER_FAILED",
        ),
        (
            "Kubernetes post-upload command failed (exit 1): npm ERR! missing script: build",
            "K8S_POST_UPLOAD_COMMAND_FAILED",
        ),
        (
            "Kubernetes sync target path escapes the workspace remote dir: /etc/passwd",
            "K8S_SYNC_PATH_ESCAPES_WORKSPACE",
        ),
        (
            "Kubernetes sync post-upload command cwd path is not a confined absolute path: ../x",
            "K8S_SYNC_PATH_NOT_CONFINED",
        ),
        (
            "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: ./a -> /etc",
            "K8S_SYNC_OUT_LINK_ESCAPES",
        ),
        ("Pod pc-7f3a-0 is terminating", "K8S_RESUME_POD_NOT_RUNNING"),
        ("Job is Succeeded", "K8S_RESUME_JOB_FINISHED"),
        (
            "fast-upload flush failed: execInPod timed out after 5000ms (pod=p, container=c, cmd0=/bin/sh). The WebSocket likely dropped before the command produced a status frame.",
            "K8S_FAST_UPLOAD_FLUSH_FAILED",
        ),
        (
            "curl: (6) Could not resolve host: example.com\nPaperclip network policy denied or could not route this request. No task-scoped destinations are granted. Request access through executionWorkspaceSettings.networkEgress.\n",
            "K8S_NETWORK_EGRESS_DENIED_HINT",
        ),
        (
            "API group agents.x-k8s.io serves none of [v1beta1, v1alpha1] (serves: nothing). Upgrade the agent-sandbox controller, or set backend: \"job\".",
            "K8S_SANDBOX_API_VERSION_UNSUPPORTED",
        ),
    ];
    for (message, code) in cases {
        assert_eq!(code_of(message), Some(code), "{message}");
    }
}

#[test]
fn the_most_specific_template_wins() {
    // Also an instance of "Expected ${expected}, received ${received}".
    assert_eq!(
        code_of("Expected boolean, received string"),
        Some("K8S_CONFIG_BOOLEAN_AS_STRING")
    );
    assert_eq!(
        code_of("Expected object, received null"),
        Some("K8S_CONFIG_NOT_OBJECT")
    );
    assert_eq!(
        code_of("Expected number, received string"),
        Some("K8S_CONFIG_TYPE_MISMATCH")
    );
    // A post-upload failure is also an instance of the generic transfer template.
    let message = "Kubernetes post-upload command failed (exit 2)";
    assert_eq!(code_of(message), Some("K8S_POST_UPLOAD_COMMAND_FAILED"));
    let all: Vec<&str> = candidates(message).iter().map(|e| e.code).collect();
    assert_eq!(
        all,
        ["K8S_POST_UPLOAD_COMMAND_FAILED", "K8S_SYNC_TRANSFER_FAILED"]
    );
    // Exact short templates do not swallow longer messages.
    assert_eq!(code_of("Invalid"), Some("K8S_CONFIG_PATTERN_MISMATCH"));
    assert_eq!(code_of("Invalid url"), Some("K8S_CONFIG_URL_INVALID"));
    assert_eq!(code_of("Invalid CIDR"), Some("K8S_CONFIG_CIDR_INVALID"));
    assert_eq!(
        code_of("Kubernetes login PTY concurrent session limit reached for this company"),
        Some("K8S_LOGIN_PTY_COMPANY_LIMIT")
    );
}

#[test]
fn zod_list_notation_matches_one_or_more_keys() {
    assert_eq!(
        code_of("Unrecognized key(s) in object: 'image'"),
        Some("K8S_CONFIG_UNRECOGNIZED_KEYS")
    );
    assert_eq!(
        code_of("Unrecognized key(s) in object: 'image', 'enable'"),
        Some("K8S_CONFIG_UNRECOGNIZED_KEYS")
    );
}

#[test]
fn a_thrown_zod_error_is_explained_by_its_first_issue() {
    let message = "[\n  {\n    \"code\": \"custom\",\n    \"message\": \"kubernetes provider requires one of `inCluster` or `kubeconfig`\",\n    \"path\": []\n  }\n]";
    assert_eq!(code_of(message), Some("K8S_CONFIG_AUTH_MISSING"));
}

#[test]
fn surrounding_whitespace_and_an_error_prefix_are_ignored() {
    assert_eq!(
        code_of("  Error: CreateOS connection failed.\n"),
        Some("CREATEOS_CONNECTION_FAILED")
    );
    assert_eq!(
        code_of("Error: Kubernetes login PTY: lease has expired"),
        Some("K8S_LOGIN_PTY_LEASE_EXPIRED")
    );
}

#[test]
fn unknown_messages_are_not_explained() {
    assert_eq!(
        code_of("The operation was aborted due to a cosmic ray"),
        None
    );
    assert_eq!(code_of(""), None);
    assert_eq!(code_of("CreateOS API URL is invalid. Extra"), None);
    assert_eq!(code_of("Invalid URL"), None);
}

#[test]
fn entry_fields() {
    let e = by_code("K8S_JOB_DEADLINE_UNSUPPORTED").expect("entry");
    assert_eq!(e.provider, Provider::Kubernetes);
    assert_eq!(e.kind, Kind::Thrown);
    assert_eq!(e.hooks, ["onEnvironmentAcquireLease"]);
    let e = by_code("CREATEOS_WORKSPACE_LEASE_MISMATCH").expect("entry");
    assert_eq!(
        e.fix,
        "Re-acquire a fresh lease for this environment and pass that lease to the realize call."
    );
}

#[test]
fn trailing_newline_does_not_demote_an_exact_template() {
    assert_eq!(
        code_of("Expected boolean, received string\n"),
        Some("K8S_CONFIG_BOOLEAN_AS_STRING")
    );
    assert_eq!(
        code_of("Unknown adapter type: "),
        Some("K8S_ADAPTER_UNKNOWN")
    );
}

#[test]
fn escaped_newlines_match_real_ones() {
    let logged = "curl: (7) Failed to connect\\nPaperclip network policy denied or could not route this request. No task-scoped destinations are granted. Request access through executionWorkspaceSettings.networkEgress.\\n";
    assert_eq!(code_of(logged), Some("K8S_NETWORK_EGRESS_DENIED_HINT"));
}

#[test]
fn every_contract_line_explains_to_its_own_entry() {
    for e in error_catalog::entries() {
        assert_eq!(code_of(e.template), Some(e.code), "{}", e.template);
    }
}
