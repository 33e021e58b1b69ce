//! Messages of this implementation that the original never raised, because in these cases the
//! original failed worse: it left a cloud resource behind without saying so, hung, or let a
//! library's internal text reach the user (issue 15). They are not contract lines, so they live
//! apart from the contract tables (which must equal the contract files), but they are explained
//! and documented like every other message.

use crate::{BLANK, Entry, Provider};

const CREATEOS: Entry = Entry {
    provider: Provider::CreateOs,
    ..BLANK
};

const K8S: Entry = Entry {
    provider: Provider::Kubernetes,
    ..BLANK
};

/// Hooks that build a Kubernetes client from the environment's kubeconfig (the probe returns
/// the message as `metadata.error`).
const K8S_CLIENT: &[&str] = &[
    "onEnvironmentProbe",
    "onEnvironmentAcquireLease",
    "onEnvironmentResumeLease",
    "onEnvironmentReleaseLease",
    "onEnvironmentDestroyLease",
    "onEnvironmentExecute",
    "onEnvironmentSyncIn",
    "onEnvironmentSyncOut",
    "onLoginPtyOpen",
];

pub(crate) const ENTRIES: &[Entry] = &[
    Entry {
        code: "CREATEOS_ACQUIRE_STOPPED_BY_SHUTDOWN",
        template: "CreateOS lease acquisition was stopped by worker shutdown; nothing was left behind.",
        hooks: &["onEnvironmentAcquireLease", "onEnvironmentProbe"],
        meaning: "The plugin worker began shutting down while this acquire (or probe) was in flight, or before it started; the sandbox it had created, if any, was deleted before the worker exited.",
        causes: &[
            "The host stopped or restarted the plugin (upgrade, disable, host shutdown) during a run start or an environment test.",
        ],
        fix: "Nothing to clean up: start the run or the probe again once the plugin is back.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_CREATION_CLEANUP_UNCONFIRMED",
        template: "CreateOS sandbox creation could not be confirmed and cleanup is unconfirmed; delete any sandbox labelled paperclip.ai/acquisition-id=${acquisitionId}.",
        hooks: &["onEnvironmentAcquireLease", "onEnvironmentProbe"],
        meaning: "Creating (or forking) the lease's sandbox failed without a definite answer (the reply was lost, cut, garbled or a 5xx, or the deadline passed), so the sandbox may exist; finding it by its acquisition label, or deleting it, failed as well.",
        causes: &[
            "The CreateOS API became unreachable or returned errors while the create was answered and again during the cleanup lookup.",
            "The API key lost access to list or delete sandboxes.",
        ],
        fix: "List the account's sandboxes in CreateOS and delete the one whose labels contain the `paperclip.ai/acquisition-id` shown in the message (there is at most one); then acquire again.",
        ..CREATEOS
    },
    Entry {
        code: "K8S_KUBECONFIG_TOKEN_INVALID",
        template: "Kubernetes kubeconfig user token is not a valid HTTP header value (it contains a line break or another control character); paste the token again without them.",
        hooks: K8S_CLIENT,
        meaning: "The kubeconfig's user token cannot be sent in an `Authorization` header, so no request to the cluster can be made.",
        causes: &[
            "A token pasted with a line break in the middle (copied from a wrapped terminal).",
            "A token value that holds a control character or non-ASCII text.",
        ],
        fix: "Copy the token again as one line (e.g. `kubectl create token <sa>`), put it in the kubeconfig's `users[].user.token` and save the environment.",
        ..K8S
    },
    Entry {
        code: "K8S_KUBECONFIG_YAML_INVALID",
        template: "Kubernetes kubeconfig could not be read as YAML (${position}): ${reason}; fix it and save the environment again.",
        hooks: K8S_CLIENT,
        meaning: "The inline kubeconfig is not YAML the client can read; the message gives the line and column and, for a repeated key, says so. The parser's own text is not shown because it quotes the kubeconfig's lines, secrets included.",
        causes: &[
            "A key given twice in one mapping (for example two `token:` lines, or a second `kind:` after pasting two files together).",
            "Broken indentation or an unclosed bracket or quote.",
        ],
        fix: "Open the kubeconfig at the given line and column, remove the duplicate or fix the syntax (`kubectl config view --kubeconfig FILE` shows whether it parses), and save the environment again.",
        ..K8S
    },
];
