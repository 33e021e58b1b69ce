//! The Kubernetes provider's messages, in the order of `tests/data/contract/kubernetes-errors.txt`.

use sandbox_core::Hook::*;

use crate::{BLANK, Entry, Kind, Origin, Provider, Raiser, on, other};

const K8S: Entry = Entry {
    provider: Provider::Kubernetes,
    ..BLANK
};

/// Hooks that parse the environment config with the zod schema: validate returns the messages
/// in `errors[]`, the probe in `metadata.errors[]`, the others reject with a ZodError whose
/// message is the JSON list of issues.
const CONFIG: &[Raiser] = &[
    on(ValidateConfig),
    on(Probe),
    on(AcquireLease),
    on(ResumeLease),
    on(ReleaseLease),
    on(DestroyLease),
    on(Execute),
    on(SyncIn),
    on(SyncOut),
];
const SYNC: &[Raiser] = &[on(SyncIn), on(SyncOut)];
const SYNC_IN: &[Raiser] = &[on(SyncIn)];
const SYNC_OUT: &[Raiser] = &[on(SyncOut)];
const ACQUIRE: &[Raiser] = &[on(AcquireLease)];
const EXECUTE: &[Raiser] = &[on(Execute)];
const RESUME: &[Raiser] = &[on(ResumeLease)];
const LOGIN: &[Raiser] = &[on(LoginPtyOpen)];
/// Hooks that build a Kubernetes client from the environment's kubeconfig (the probe returns
/// the message as `metadata.error`).
const K8S_CLIENT: &[Raiser] = &[
    on(Probe),
    on(AcquireLease),
    on(ResumeLease),
    on(ReleaseLease),
    on(DestroyLease),
    on(Execute),
    on(SyncIn),
    on(SyncOut),
    on(LoginPtyOpen),
];
const READY_WAIT: &[Raiser] = &[
    on(Execute),
    on(ResumeLease),
    on(SyncIn),
    on(SyncOut),
    on(LoginPtyOpen),
];
/// Hooks that discover the Sandbox API version (G-apiversion): acquire on the sandbox-cr
/// backend, and the hooks of a lease whose metadata records no version.
const SANDBOX_API: &[Raiser] = &[
    on(Probe),
    on(AcquireLease),
    on(ResumeLease),
    on(Execute),
    on(SyncIn),
    on(SyncOut),
];
const NOT_WIRED: &[Raiser] = &[other(
    "none in this plugin version (library routine not wired into the hooks)",
)];
const REPOSITORY: &[Raiser] = &[other(
    "none in this plugin version (sandbox-repository realization, not wired into the hooks)",
)];

const SCRIPT_FIX: &str = "Look at the full `Kubernetes … failed (exit N): TOKEN` message for which transfer failed, then check the pod with `kubectl exec`: the workspace remote dir must exist, be writable by the container user (uid 1000) and contain no symlinks leading outside it; the image needs `/bin/sh`, a working `realpath --` or `readlink -f --`, `dirname`, `mkdir`, `mv`, `chmod`, `cp`, `head`, `cat`, `dd` and GNU `tar` (BusyBox's `tar` refuses `--no-xattrs`, so every sync-out fails with it); docs/operators.md lists what an image needs.";

const ZOD_TYPE_FIX: &str = "Correct the type of the field named in the issue's `path` (the validate hook reports each issue; a thrown ZodError lists them as JSON): numbers and booleans unquoted, lists as JSON arrays, maps as objects.";

pub(crate) const ENTRIES: &[Entry] = &[
    // ---- A. thrown errors -------------------------------------------------------------------
    Entry {
        code: "K8S_SYNC_REMOTE_DIR_MISSING",
        template: "Kubernetes file sync requires a workspace remote dir on the lease metadata.",
        hooks: SYNC,
        meaning: "A sync call's lease has no `remoteCwd` in its metadata, so the plugin does not know where the workspace is in the pod.",
        causes: &[
            "A lease acquired by an older plugin version or by another provider.",
            "Lease metadata edited or truncated in Paperclip's database.",
        ],
        fix: "Re-acquire a fresh lease for this environment and pass that lease to the sync call.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_LEASE_ID_MISSING",
        template: "Kubernetes file sync requires a provider lease ID.",
        hooks: SYNC,
        meaning: "A sync call's lease has no providerLeaseId (the Sandbox name).",
        causes: &[
            "The lease expired or was released (its providerLeaseId became null) and is still used.",
        ],
        fix: "Re-acquire a fresh lease for this environment and pass that lease to the sync call.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_BACKEND_UNSUPPORTED",
        template: "Kubernetes file sync is only supported on the sandbox-cr backend (lease backend: ${leaseBackend}).",
        hooks: SYNC,
        meaning: "File sync needs a long-lived Sandbox pod; leases on the `job` backend run each command as a Job and have no pod to sync into.",
        causes: &["The environment (or the lease) uses `backend: \"job\"`."],
        fix: "Set `backend: \"sandbox-cr\"` (requires the kubernetes-sigs/agent-sandbox controller) and acquire a new lease, or avoid file sync with the job backend.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_POD_UNRESOLVED",
        template: "Kubernetes file sync could not resolve the Sandbox pod name.",
        hooks: SYNC,
        meaning: "The lease's Sandbox has no pod the plugin can find.",
        causes: &[
            "The Sandbox or its pod was deleted (manually, by the controller, or by the hard-stop deadline).",
            "The agent-sandbox controller has not created the pod yet.",
        ],
        fix: "Check `kubectl -n <namespace> get sandbox,pods`; if the Sandbox is gone, re-acquire a fresh lease and sync with it.",
        ..K8S
    },
    Entry {
        code: "K8S_JOB_DEADLINE_UNSUPPORTED",
        template: "The Kubernetes job backend cannot honor a requested lease deadline; use the sandbox-cr backend.",
        hooks: ACQUIRE,
        meaning: "The caller asked for a lease that is guaranteed to stop at a deadline (`requestedExpiresAt`), which only the sandbox-cr backend can enforce. Nothing was created.",
        causes: &["A bounded run on an environment with `backend: \"job\"`."],
        fix: "Switch the environment to `backend: \"sandbox-cr\"`, or acquire without `requestedExpiresAt`.",
        ..K8S
    },
    Entry {
        code: "K8S_LEASE_DEADLINE_INVALID",
        template: "Requested lease deadline (${JSON.stringify(requestedExpiresAt)}) is not a valid ISO 8601 timestamp. Failing closed instead of silently substituting a default deadline the caller did not ask for.",
        hooks: ACQUIRE,
        meaning: "`requestedExpiresAt` cannot be parsed as a date, so the plugin refuses the lease rather than pick a deadline itself. Nothing was created.",
        causes: &[
            "A malformed timestamp (e.g. `\"tomorrow\"`, a number in seconds, a locale format).",
        ],
        fix: "Pass `requestedExpiresAt` as an ISO 8601 timestamp such as `2026-01-31T12:00:00Z`.",
        ..K8S
    },
    Entry {
        code: "K8S_LEASE_DEADLINE_TOO_CLOSE",
        template: "Requested lease deadline (${requestedExpiresAt}) is already past or too close (< ${MIN_ACTIVE_DEADLINE_SEC}s) to acquire a bounded lease. Failing closed instead of granting a near-expired lease.",
        hooks: ACQUIRE,
        meaning: "The requested deadline is in the past or less than 30 seconds away; a lease that short would expire while starting.",
        causes: &[
            "The deadline was computed long before the acquire call (queueing delay).",
            "Clock skew between the Paperclip host and the caller.",
        ],
        fix: "Request a deadline at least 30 seconds (realistically several minutes) in the future, and check the host clocks are synchronised (NTP).",
        ..K8S
    },
    Entry {
        code: "K8S_KUBECONFIG_MISSING",
        template: "createKubeConfig requires either inCluster=true or a kubeconfig string",
        hooks: &[
            on(Probe),
            on(AcquireLease),
            on(ResumeLease),
            on(ReleaseLease),
            on(DestroyLease),
            on(Execute),
            on(SyncIn),
            on(SyncOut),
        ],
        meaning: "No cluster credentials: `inCluster` is not true and `kubeconfig` is blank. The probe reports it in `metadata.error`.",
        causes: &[
            "`kubeconfig` is whitespace only (passes validation, fails here).",
            "A secret reference that resolved to an empty string.",
        ],
        fix: "Set `kubeconfig` to the full kubeconfig YAML text (or a secret holding it), or set `inCluster: true` when Paperclip runs inside the cluster with a suitable service account.",
        ..K8S
    },
    Entry {
        code: "K8S_ADAPTER_RUNTIME_IMAGE_MISSING",
        template: "Adapter \"${entry.adapterType}\" is missing required runtime field: runtimeImage",
        hooks: &[on(ValidateConfig), on(AcquireLease)],
        meaning: "The environment's `adapters` registry has an entry for the run's adapter without a `runtimeImage`, so the plugin does not know which image to run.",
        causes: &["An `adapters[]` entry that only sets `adapterType` (and maybe `enabled`)."],
        fix: "Add `runtimeImage` (e.g. `ghcr.io/acme/claude-runtime:1.2`) to that `adapters[]` entry, or name the adapter's image in `runtimeImages` (`{\"<adapterType>\": \"ghcr.io/acme/claude-runtime:1.2\"}`).",
        ..K8S
    },
    Entry {
        code: "K8S_ADAPTER_NOT_IN_REGISTRY",
        template: "Adapter \"${adapterType}\" is not in the configured adapter registry",
        hooks: &[on(ValidateConfig), on(AcquireLease)],
        meaning: "The environment defines an `adapters` registry, and the run's (or the config's default) adapter type is not in it. A non-empty registry replaces the built-in adapter list.",
        causes: &[
            "A registry that lists only some adapters while runs use another (e.g. codex_local).",
        ],
        fix: "Add an `adapters[]` entry (with `runtimeImage`) for the named adapter type, name its image in `runtimeImages` (it then runs with no environment keys and no egress FQDNs of its own), or remove the `adapters` key to use the built-in defaults.",
        ..K8S
    },
    Entry {
        code: "K8S_ADAPTER_UNKNOWN",
        template: "Unknown adapter type: ${adapterType}",
        hooks: ACQUIRE,
        meaning: "The run's adapter type is not one of the built-in adapters, no registry is configured, and `runtimeImages` does not name an image for it.",
        causes: &[
            "A custom or newer adapter used on an environment whose `runtimeImages` does not name it.",
            "A typo in the run's adapter type or in the `runtimeImages` key.",
        ],
        fix: "Name the adapter's image in the environment's `runtimeImages` (`{\"aider_local\": \"ghcr.io/acme/agent-runtime-aider:1.0\"}`; it then runs with no environment keys, no egress FQDNs of its own and the probe `sh -c true`), or run with a built-in adapter (claude_local, codex_local, gemini_local, cursor_local, opencode_local, pi_local).",
        ..K8S
    },
    Entry {
        code: "K8S_IMAGE_OVERRIDE_NOT_ALLOWED",
        template: "Image override \"${target.imageOverride}\" is not in allowlist",
        kind: Kind::Internal,
        hooks: NOT_WIRED,
        meaning: "An image override does not match any glob of `imageAllowList`. This plugin version never passes an override, so hooks do not raise it.",
        causes: &["A caller of the image resolver asked for an image outside the allowlist."],
        fix: "Add a glob matching the image to `imageAllowList`, or use an allowed image.",
        ..K8S
    },
    Entry {
        code: "K8S_HARD_STOP_DEADLINE_INVALID",
        template: "Invalid sandbox hard-stop deadline: ${atEpochSec}",
        hooks: ACQUIRE,
        meaning: "The computed hard-stop time for a bounded lease is not a positive whole number of seconds (a defensive check).",
        causes: &["A plugin defect; acquire always computes an integer."],
        fix: "Report it with the requested deadline; meanwhile acquire without `requestedExpiresAt`.",
        ..K8S
    },
    Entry {
        code: "K8S_JOB_TIMEOUT",
        template: "Job ${namespace}/${name} did not complete within ${timeoutMs}ms",
        kind: Kind::Internal,
        hooks: EXECUTE,
        meaning: "A job-backend command did not finish in time. The execute hook catches it and returns `timedOut: true` with exit code null; the text itself is not shown.",
        causes: &[
            "The command runs longer than its timeout (or `podActivityDeadlineSec`).",
            "The Job's pod cannot be scheduled or its image pulled.",
        ],
        fix: "Raise the command's timeout, or check `kubectl -n <namespace> describe job <name>` for scheduling and image-pull problems.",
        ..K8S
    },
    Entry {
        code: "K8S_JOB_UID_MISSING",
        template: "Job created without a UID",
        hooks: ACQUIRE,
        meaning: "The API server accepted the Job but returned no `metadata.uid`.",
        causes: &[
            "An admission webhook or proxy that rewrites responses.",
            "A non-conformant API server.",
        ],
        fix: "Check admission webhooks and proxies between Paperclip and the API server; retry the acquire.",
        ..K8S
    },
    Entry {
        code: "K8S_SANDBOX_READY_TIMEOUT",
        template: "Sandbox ${namespace}/${name} did not reach Ready phase within ${timeoutMs}ms",
        hooks: READY_WAIT,
        meaning: "The Sandbox did not become Ready in time. Execute turns this into a timed-out result; resume reports it as the reason; sync and login PTY reject with it. The waits: execute its `timeoutMs`, sync `podActivityDeadlineSec`, resume 20 s, a login open 20 s (README, \"Waits and their bounds\"). An image that cannot be pulled, a container that cannot start, an unschedulable pod and a Sandbox no controller reconciles fail the wait earlier with their own messages (K8S_POD_IMAGE_PULL_FAILED, K8S_POD_CONTAINER_CREATE_FAILED, K8S_POD_CONTAINER_CRASHING, K8S_POD_UNSCHEDULABLE, K8S_SANDBOX_NO_CONTROLLER), unless the wait ends first.",
        causes: &[
            "A large image still being pulled, or a pull the kubelet has failed only once so far.",
            "A pod unschedulable for less than `unschedulableGraceSec`, or a new Sandbox without status for less than 30 s, when the wait is shorter.",
            "The agent-sandbox controller reconciling slowly (a long queue, a restart).",
        ],
        fix: "Run `kubectl -n <namespace> describe sandbox <name>`, `kubectl -n <namespace> describe pod <name>` and `kubectl -n <namespace> get events`; fix image pulls or capacity. For execute and sync, a longer `timeoutMs` or `podActivityDeadlineSec` gives a slow pull more time; resume and a login open wait their fixed 20 s, so try them again once the pod is Ready.",
        ..K8S
    },
    Entry {
        code: "K8S_SANDBOX_UID_MISSING",
        template: "Sandbox CR created without a UID",
        hooks: ACQUIRE,
        meaning: "The API server accepted the Sandbox but returned no `metadata.uid`.",
        causes: &[
            "An admission webhook or proxy that rewrites responses.",
            "A broken agent-sandbox CRD installation.",
        ],
        fix: "Check the agent-sandbox CRD (`kubectl get crd sandboxes.agents.x-k8s.io`) and any webhooks; retry the acquire.",
        ..K8S
    },
    Entry {
        code: "K8S_SANDBOX_FAILED",
        template: "Sandbox ${namespace}/${name} failed: ${mapped.reason ?? (failedCondition?.reason as string) ?? \"unknown reason\"} — ${mapped.message ?? (failedCondition?.message as string) ?? \"\"}",
        hooks: READY_WAIT,
        meaning: "The Sandbox's status says it failed: `status.phase: Failed` (agent-sandbox before v0.5), a `Failed` condition, or `Ready=False` with a reason containing `failed`; the reason and message after `failed:` are the status's own. A pod that cannot pull its image, keeps crashing or cannot be scheduled ends the wait first with its own message (K8S_POD_*).",
        causes: &[
            "The controller gave up on the Sandbox's pod (its reason and message say why).",
            "A policy or quota rejected the pod (Pod Security, the tenant ResourceQuota or LimitRange).",
        ],
        fix: "Fix the cause the message names (`kubectl -n <namespace> describe sandbox <name>` shows details), then re-acquire a fresh lease.",
        ..K8S
    },
    Entry {
        code: "K8S_SANDBOX_TERMINATING",
        template: "Sandbox ${namespace}/${name} is Terminating — cannot wait for Ready",
        hooks: READY_WAIT,
        meaning: "The lease's Sandbox is being deleted, so it will never become Ready again.",
        causes: &[
            "The lease was released or destroyed concurrently.",
            "The Sandbox was deleted by hand or hit its hard-stop deadline.",
        ],
        fix: "Re-acquire a fresh lease for this environment and use it instead.",
        ..K8S
    },
    Entry {
        code: "K8S_LEASE_DELETE_FAILED",
        template: "Failed to delete one or more Kubernetes lease resources",
        hooks: &[on(DestroyLease)],
        meaning: "Destroying the lease failed for two or more of its resources (workload, pod, Secret); the individual errors are in the AggregateError's `errors`. Some resources may remain.",
        causes: &[
            "The service account lacks `delete` permission on sandboxes, jobs, pods or secrets in the tenant namespace.",
            "The API server was unreachable.",
        ],
        fix: "Grant the plugin's identity delete rights in the tenant namespace, find the leftovers with `kubectl -n <namespace> get sandboxes,jobs,pods,secrets -l paperclip.io/managed-by=paperclip-k8s-plugin`, delete those of this lease, and destroy again.",
        ..K8S
    },
    Entry {
        code: "K8S_EGRESS_POLICY_AND_RELEASE_FAILED",
        template: "Failed to create scoped network egress policy and release its workload",
        hooks: ACQUIRE,
        meaning: "Creating one of the run's egress policies (the adapter's `<run>-adapter-egress` or the task grant's `<run>-egress`) failed, and the release that should have removed the workload without its policy failed too. The acquire's partial-failure cleanup then deleted the workload and its Secret, which succeeded (had it failed, the acquire would have ended with K8S_ACQUIRE_CLEANUP_INCOMPLETE instead): nothing of this lease is left.",
        causes: &[
            "The plugin's identity may not create `networkpolicies` (egressMode `standard`) or `ciliumnetworkpolicies.cilium.io` (egressMode `cilium`) in the tenant namespace.",
            "`egressMode: \"cilium\"` on a cluster without the Cilium CRDs.",
            "A transient API failure during the release (its delete is retried by the cleanup).",
        ],
        fix: "Grant the policy kind the egress mode needs (the RBAC in docs/rbac/, docs/operators.md), or set `egressMode: \"standard\"` on a cluster without Cilium; then acquire again.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_DESCRIPTOR_REJECTED",
        template: "LOGIN_PTY_DESCRIPTOR_REJECTED",
        hooks: LOGIN,
        meaning: "The login PTY request is not one this provider accepts.",
        causes: &[
            "The driver key is not `kubernetes`.",
            "The session home is not `/tmp/paperclip-adapter-login/<uuid>`.",
            "The login command key is not claude, codex or grok.",
        ],
        fix: "Open login sessions through Paperclip for a supported adapter (claude, codex, grok) on a Kubernetes environment.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_LEASE_MISMATCH",
        template: "Kubernetes login PTY: lease ownership mismatch or unknown lease",
        hooks: LOGIN,
        meaning: "The lease is not one this worker acquired or resumed, or it belongs to another company or environment.",
        causes: &[
            "The plugin worker restarted since the lease was acquired.",
            "A lease from another environment.",
        ],
        fix: "Resume (or re-acquire) the lease in this environment, then open the login session with it.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_LEASE_EXPIRED",
        template: "Kubernetes login PTY: lease has expired",
        hooks: LOGIN,
        meaning: "The lease's deadline has passed.",
        causes: &["The login was started on an old bounded lease."],
        fix: "Acquire a fresh lease and open the login session on it.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_ROUTE_OPEN",
        template: "Kubernetes login PTY: route already open",
        hooks: LOGIN,
        meaning: "A login PTY is already open (or opening) on this host route.",
        causes: &["A second open for the same route, e.g. after a page reload."],
        fix: "Close the existing session (onLoginPtyClose) before opening another on the route.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_GLOBAL_LIMIT",
        template: "Kubernetes login PTY concurrent session limit reached",
        hooks: LOGIN,
        meaning: "This worker already has 16 login sessions open.",
        causes: &["Sessions left open by abandoned browser tabs."],
        fix: "Close unused login sessions and try again.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_COMPANY_LIMIT",
        template: "Kubernetes login PTY concurrent session limit reached for this company",
        hooks: LOGIN,
        meaning: "This company already has 4 login sessions open.",
        causes: &["Several users logging in at once, or sessions left open."],
        fix: "Close the company's unused login sessions and try again.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_OPEN_CANCELLED",
        template: "Kubernetes login PTY open cancelled",
        hooks: LOGIN,
        meaning: "The route was closed, or the lease was released or replaced, while the session was still connecting.",
        causes: &[
            "The user closed the login dialog early.",
            "The lease was released concurrently.",
        ],
        fix: "Open the login session again, and keep the lease until it is connected.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_INPUT_TOO_LARGE",
        template: "Kubernetes login PTY input exceeds limit",
        hooks: &[on(LoginPtyInput)],
        meaning: "A single input write was larger than 64 KiB.",
        causes: &["A large paste into the login terminal."],
        fix: "Send input in pieces of at most 65536 bytes.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_LEASE_ID_MISSING",
        template: "Kubernetes login PTY requires a lease ID",
        hooks: LOGIN,
        meaning: "The login connection was attempted without a lease ID.",
        causes: &["A plugin defect (the session manager always supplies one)."],
        fix: "Open the session with a lease acquired in this environment; report it if it repeats.",
        ..K8S
    },
    Entry {
        code: "K8S_LOGIN_PTY_POD_UNAVAILABLE",
        template: "Kubernetes login PTY sandbox pod is unavailable",
        hooks: LOGIN,
        meaning: "The Sandbox is Ready but its pod cannot be found.",
        causes: &["The pod was deleted or is being replaced."],
        fix: "Wait a moment and retry; if it persists, re-acquire a fresh lease and log in on it.",
        ..K8S
    },
    Entry {
        code: "K8S_EXEC_TIMEOUT",
        template: "execInPod timed out after ${timeoutMs}ms (pod=${podName}, container=${containerName}, cmd0=${effectiveCommand[0] ?? \"\"}). The WebSocket likely dropped before the command produced a status frame.",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "A command in the pod produced no exit status within its timeout (`timeoutMs`, at least 5 s). Execute returns it as `stderr` of a timed-out result (`timedOut: true`, `exitCode: null`). The command ran in a process group of its own, which is then sent TERM and, 2 s later, KILL, so it does not outlive the call (docs/limits.md).",
        causes: &[
            "The command genuinely runs longer than the timeout.",
            "A connection that stopped carrying anything without closing (a proxy or a network path that silently drops it); one that closes is `K8S_EXEC_CONNECTION_CLOSED` at once (issue #38).",
        ],
        fix: "Raise the command's `timeoutMs`; check proxies in front of the API server allow long-lived WebSockets.",
        ..K8S
    },
    Entry {
        code: "K8S_EXEC_STDOUT_CAP",
        template: "execInPod stdout exceeded the ${maxStdoutBytes}-byte cap (pod=${podName}, container=${containerName}); the sandbox produced more output than the buffer allows.",
        kind: Kind::Internal,
        hooks: NOT_WIRED,
        meaning: "A buffered exec produced more stdout than its cap. The hooks pass no cap, so they never raise it.",
        causes: &["Very large command output with a capped caller."],
        fix: "Redirect large output to a file and sync it out instead.",
        ..K8S
    },
    Entry {
        code: "K8S_EXEC_STDERR_CAP",
        template: "execInPod stderr exceeded the ${maxStderrBytes}-byte cap (pod=${podName}, container=${containerName}); the sandbox produced more output than the buffer allows.",
        kind: Kind::Internal,
        hooks: NOT_WIRED,
        meaning: "A buffered exec produced more stderr than its cap. The hooks pass no cap, so they never raise it.",
        causes: &["Very verbose diagnostics with a capped caller."],
        fix: "Reduce the command's stderr (quiet flags) or redirect it to a file.",
        ..K8S
    },
    Entry {
        code: "K8S_STREAM_EXEC_TIMEOUT",
        template: "execInPodStreaming timed out after ${io.timeoutMs}ms (pod=${podName}, container=${containerName}, cmd0=${command[0] ?? \"\"}). The WebSocket likely dropped before the command produced a status frame.",
        hooks: SYNC,
        meaning: "A file-sync transfer (or post-upload command) in the pod did not finish within its timeout (`podActivityDeadlineSec`, or the post-upload command's `timeoutMs`).",
        causes: &[
            "A large transfer over a slow link.",
            "A connection that stalls without closing (a half-open connection; one that closes fails at once with K8S_STREAM_EXEC_CLOSED).",
            "A post-upload command that hangs or waits for input.",
        ],
        fix: "Sync less data per call, raise `podActivityDeadlineSec` (or the command's `timeoutMs`), and make sure proxies allow long-lived WebSockets.",
        ..K8S
    },
    Entry {
        code: "K8S_STREAM_EXEC_STDERR_CAP",
        template: "execInPodStreaming stderr exceeded the ${io.maxStderrBytes}-byte cap (pod=${podName}, container=${containerName}); the sandbox produced more diagnostics than the buffer allows.",
        hooks: SYNC,
        meaning: "A transfer or post-upload command wrote more than 1 MiB to stderr; the plugin stops reading to protect the worker.",
        causes: &[
            "A post-upload command with verbose output (e.g. `npm install` logs).",
            "tar printing a warning per file.",
        ],
        fix: "Make post-upload commands quieter (`--silent`, `2>/dev/null`, or redirect logs to a file).",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_PATH_NOT_CONFINED",
        template: "Kubernetes sync ${label} path is not a confined absolute path: ${candidate}",
        hooks: SYNC,
        meaning: "A pod-side path of a sync (target, source, or post-upload command cwd, as named) is relative or contains `..`. Checked before anything runs.",
        causes: &["A relative path, or a path with `..` segments."],
        fix: "Use absolute paths inside the lease's workspace remote dir, without `..`.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_PATH_ESCAPES_WORKSPACE",
        template: "Kubernetes sync ${label} path escapes the workspace remote dir: ${candidate}",
        hooks: SYNC,
        meaning: "A pod-side sync path is absolute but outside the lease's workspace remote dir.",
        causes: &["A path such as `/tmp/x` or `/root` instead of one under the workspace."],
        fix: "Sync only into or out of the workspace remote dir (the lease's `remoteCwd`) or below it.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_TRANSFER_FAILED",
        template: "Kubernetes ${input.label} failed (exit ${result.exitCode})${detail ? `: ${detail}` : \"\"}",
        hooks: SYNC,
        meaning: "The in-pod script of a file or directory transfer exited non-zero. The text after the colon is the script's diagnostic (see the K8S_SYNC_SCRIPT_* entries, e.g. `ESCAPE` = a symlink leads outside the workspace).",
        causes: &[
            "Exit 2 with the shell's own `cannot open …: No such file` (dash and BusyBox `sh` end the script on a failed `exec` redirection): a file sync-out source that does not exist in the pod.",
            "Exit 40/41: neither `realpath --` nor `readlink -f --` works in the image, or the workspace dir cannot be resolved.",
            "Exit 42 `ESCAPE`: a path resolves outside the workspace through a symlink.",
            "Exit 43: tar or cp failed: disk full, no `tar`, or (every sync-out) a `tar` that refuses `--no-xattrs`, such as BusyBox's.",
            "Exit 44-48: rename, open, mkdir or chmod failed (permissions, read-only filesystem).",
        ],
        fix: SCRIPT_FIX,
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUTPUT_GUARD",
        template: "Kubernetes ${input.label} payload exceeded the ${input.maxOutputBytes}-byte streamed-output disk guard; the sandbox emitted more bytes than allowed.",
        hooks: SYNC_OUT,
        meaning: "A sync out streamed more data than the disk guard allows (8 GiB by default) and was stopped.",
        causes: &["Syncing out a directory with build outputs, caches or node_modules."],
        fix: "Sync a smaller directory or exclude large subdirectories (`exclude` patterns).",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_LISTING_UNPARSEABLE",
        template: "Kubernetes syncOut refusing tarball with an unparseable entry listing: ${line}",
        hooks: SYNC_OUT,
        meaning: "The archive the pod sent for a sync out is not a readable tar stream, or holds a device node (the text after the colon then names it: `… is a device node`). It is refused before anything is extracted. (The original parsed a `tar -tvf` listing; this implementation reads the tar headers, and refuses the same archives with the same message.)",
        causes: &[
            "A device node (a copy of `/dev/null`, say) in the directory synced out.",
            "A `tar` in the image that wrote something other than a tar stream (a wrapper script, an error text on stdout).",
        ],
        fix: "Delete the device node in the pod or add it to `exclude`; check that the image's `tar` is GNU tar (docs/operators.md, what a runtime image needs).",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_SYMLINK_UNPARSEABLE",
        template: "Kubernetes syncOut refusing unparseable symlink entry: ${line}",
        kind: Kind::Internal,
        hooks: &[other(
            "none in this implementation (the archive is read as tar headers, not as a `tar -tvf` listing)",
        )],
        meaning: "The original refused a symlink whose `tar -tvf` listing line it could not split into name and target. This implementation reads names and targets from the tar headers themselves, so no symlink is unreadable and this text is never raised; a symlink whose target leaves the tree is refused with K8S_SYNC_OUT_LINK_ESCAPES.",
        causes: &["Not raised by this implementation."],
        fix: "Nothing to do for this text; for K8S_SYNC_OUT_LINK_ESCAPES, see its entry.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_HARDLINK_UNPARSEABLE",
        template: "Kubernetes syncOut refusing unparseable hardlink entry: ${line}",
        kind: Kind::Internal,
        hooks: &[other(
            "none in this implementation (the archive is read as tar headers, not as a `tar -tvf` listing)",
        )],
        meaning: "The original refused a hard link whose `tar -tvf` listing line it could not split into name and target. This implementation reads names and targets from the tar headers themselves, so no hard link is unreadable and this text is never raised; a hard link to anything but an earlier file of the same archive is refused with K8S_SYNC_OUT_LINK_ESCAPES.",
        causes: &["Not raised by this implementation."],
        fix: "Nothing to do for this text; for K8S_SYNC_OUT_LINK_ESCAPES, see its entry.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_MEMBER_ESCAPES",
        template: "Kubernetes syncOut refusing tarball member that escapes the extraction dir: ${name}",
        hooks: SYNC_OUT,
        meaning: "An archive entry has an absolute path or climbs out with `..`; extracting it would write outside the target.",
        causes: &["A tampered or unusual archive produced in the pod."],
        fix: "Inspect the named entry in the pod; sync only ordinary workspace files.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_LINK_ESCAPES",
        template: "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: ${name} -> ${linkTarget}",
        hooks: SYNC_OUT,
        meaning: "A symlink or hard link in the pod's archive points outside the synced directory, so the archive is refused before anything is extracted. A symlink is kept only when its target stays inside however links combine: relative, climbing with leading `..` no higher than the link's own depth, then descending (a target such as `a/../b` is refused); a hard link only to an earlier file of the same archive (docs/limits.md).",
        causes: &[
            "A symlink to an absolute path (`/usr/lib/…`) or one that climbs out of the tree with `../`.",
            "A relative target with `..` after a name (`a/../b`), which this implementation refuses.",
        ],
        fix: "Make the named link relative and inside the directory, delete it, or add it to `exclude`; or sync out with `followSymlinks: true` to copy what links point to.",
        ..K8S
    },
    Entry {
        code: "K8S_POST_UPLOAD_COMMAND_FAILED",
        template: "Kubernetes post-upload command failed (exit ${result.exitCode})${detail ? `: ${detail}` : \"\"}",
        hooks: SYNC_IN,
        meaning: "A post-upload command of a sync in exited non-zero; later commands were skipped. The text after the colon is its stderr.",
        causes: &["The command itself failed (missing tool, failing install, wrong cwd)."],
        fix: "Run the command by hand in the pod (`kubectl exec`) from the same cwd to see and fix the failure.",
        ..K8S
    },
    Entry {
        code: "K8S_POD_NOT_EXECUTABLE",
        template: "Refusing Kubernetes exec: pod/container ${namespace}/${podName}/${containerName} is not running, ready, and executable.",
        kind: Kind::Internal,
        hooks: NOT_WIRED,
        meaning: "A pod-readiness check refused to exec into a pod that is not Running and Ready.",
        causes: &["The pod is starting, crashing or terminating."],
        fix: "Wait for the pod to become Ready (`kubectl get pod -w`) or re-acquire the lease.",
        ..K8S
    },
    Entry {
        code: "K8S_SANDBOX_API_NOT_SERVED",
        template: "API group ${SANDBOX_GROUP} is not served by this cluster. Install the kubernetes-sigs/agent-sandbox controller, or set backend: \"job\" to dispatch runs as batch/v1 Jobs instead.",
        kind: Kind::Thrown,
        hooks: SANDBOX_API,
        meaning: "The cluster does not serve the agent-sandbox API group (`agents.x-k8s.io`), which the sandbox-cr backend needs. The provider finds the Sandbox version by discovery (`GET /apis`, G-apiversion) before it creates anything, so an acquire that fails with this created nothing.",
        causes: &[
            "kubernetes-sigs/agent-sandbox (its CRDs and controller) is not installed.",
            "The kubeconfig points at another cluster than the one with agent-sandbox.",
        ],
        fix: "Install agent-sandbox v1.0.x (docs/operators.md) and check `kubectl api-versions | grep agents.x-k8s.io` lists `agents.x-k8s.io/v1beta1`. (`backend: \"job\"` works in a hook's config, as `paperclip-sandbox check --backend job` uses it, but validation refuses it for a stored environment.)",
        ..K8S
    },
    Entry {
        code: "K8S_SANDBOX_API_VERSION_UNSUPPORTED",
        template: "API group ${SANDBOX_GROUP} serves none of [${SANDBOX_API_VERSION_PREFERENCE.join(\", \")}] (serves: ${[...served].join(\", \") || \"nothing\"}). Upgrade the agent-sandbox controller, or set backend: \"job\".",
        kind: Kind::Thrown,
        hooks: SANDBOX_API,
        meaning: "The agent-sandbox API group is served, but in neither `v1beta1` nor `v1alpha1`, the versions this provider speaks. Discovery runs before anything is created.",
        causes: &["An agent-sandbox controller version too old or too new for this plugin."],
        fix: "Upgrade (or pin) the agent-sandbox controller to a version serving v1beta1 or v1alpha1, or set `backend: \"job\"`.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_URL_INVALID",
        template: "Sandbox repository realization requires a valid approved HTTPS Git URL.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "The repository URL cannot be parsed.",
        causes: &["A scp-style URL (`git@github.com:org/repo`) or a typo."],
        fix: "Use an `https://` URL, e.g. `https://github.com/org/repo`.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_URL_NOT_APPROVED",
        template: "Sandbox repository realization requires an approved HTTPS Git URL without credentials, query, or fragment.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "The repository URL is not a plain HTTPS URL on an approved host (github.com, gitlab.com, bitbucket.org).",
        causes: &[
            "Credentials, a port, a query or fragment in the URL.",
            "A self-hosted Git host.",
            "A URL with fewer than two path segments.",
        ],
        fix: "Use `https://<approved host>/<owner>/<repo>` and pass credentials through the credential binding, not the URL.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_TARGET_NOT_ALLOWED",
        template: "Sandbox repository realization only permits the fixed /workspace/repository target.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "The checkout target is not `/workspace/repository`.",
        causes: &["A custom workspace path."],
        fix: "Check out into `/workspace/repository`.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_URL_MISSING",
        template: "Sandbox repository realization requires repoUrl.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "No repository URL was given.",
        causes: &["`repoUrl` empty or missing."],
        fix: "Pass the repository's HTTPS URL as `repoUrl`.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_REVISION_INVALID",
        template: "Sandbox repository realization requires an exact 40-character revision SHA.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "The revision is not a full 40-character commit SHA.",
        causes: &["A branch or tag name, or an abbreviated SHA."],
        fix: "Resolve the revision to its full commit SHA (`git rev-parse <ref>`) and pass that.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_CREDENTIAL_BINDING_MISSING",
        template: "Sandbox repository realization requires an explicit read-only Git credential binding.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "The repository needs credentials but no credential Secret was named.",
        causes: &["`credentialRequired` set without `credentialSecretName`."],
        fix: "Create a Secret with a read-only token and pass its name as `credentialSecretName`.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_GIT_PREPARATION_FAILED",
        template: "Sandbox repository realization failed during Git preparation; repository credentials and Git output were suppressed.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "The in-pod git clone/fetch/checkout failed; its output is suppressed so credentials cannot leak.",
        causes: &[
            "A wrong or expired token.",
            "A SHA that does not exist in the repository.",
            "No egress to the Git host.",
        ],
        fix: "Check the token's access, that the SHA exists, and that the sandbox may reach the Git host; reproduce by hand with `git` in a pod.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_HEAD_MISMATCH",
        template: "Sandbox repository HEAD did not match the requested revision.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "After checkout, HEAD is not the requested commit.",
        causes: &[
            "A hook or filter in the repository moved HEAD.",
            "A corrupted clone.",
        ],
        fix: "Retry on a fresh lease; check the repository for checkout hooks.",
        ..K8S
    },
    Entry {
        code: "K8S_REPO_CHECKOUT_DIRTY",
        template: "Sandbox repository checkout is not clean after detached checkout.",
        kind: Kind::Internal,
        hooks: REPOSITORY,
        meaning: "The working tree has changes right after checkout.",
        causes: &[
            "Line-ending or filter settings (.gitattributes) rewriting files.",
            "Files created by checkout hooks.",
        ],
        fix: "Fix the repository's .gitattributes / hooks so a checkout is clean, or retry on a fresh lease.",
        ..K8S
    },
    // ---- B. returned errors and summaries ----------------------------------------------------
    Entry {
        code: "K8S_JOB_BACKEND_NO_LOGIN_PTY",
        template: "The job backend cannot support login PTY advertised by the Kubernetes driver; use sandbox-cr.",
        kind: Kind::Returned,
        hooks: &[on(ValidateConfig)],
        meaning: "The config is valid but uses `backend: \"job\"`; the driver advertises login PTY, which needs a long-lived pod, so validation refuses it.",
        causes: &["`backend: \"job\"` in the environment config."],
        fix: "Set `backend: \"sandbox-cr\"` (install the agent-sandbox controller if needed).",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_INVALID",
        template: "Invalid Kubernetes provider configuration.",
        kind: Kind::Returned,
        hooks: &[on(Probe)],
        meaning: "The probe found the environment config invalid; the individual problems are in the probe result's `metadata.errors`.",
        causes: &["Any of the K8S_CONFIG_* / zod messages."],
        fix: "Run validation (or `paperclip-sandbox explain` on each message in `metadata.errors`) and correct the config.",
        ..K8S
    },
    Entry {
        code: "K8S_CLUSTER_PROBE_FAILED",
        template: "Kubernetes cluster probe failed.",
        kind: Kind::Returned,
        hooks: &[on(Probe)],
        meaning: "The plugin could not talk to the cluster: building the client failed, or listing pods in the tenant namespace failed with anything but 403 or 404 (a 403 now means the server answered, and the probe's permission lines name what is missing). The underlying message is in `metadata.error` and on the summary's second line; the runtime-image lines follow, since they need no cluster.",
        causes: &[
            "A malformed kubeconfig (the YAML parser's message is in metadata.error).",
            "The API server is unreachable from the Paperclip host, or its certificate is not trusted.",
            "The credentials are expired or rejected (401).",
            "The API server did not answer within the probe's bound (K8S_API_TIMEOUT).",
        ],
        fix: "Check `metadata.error`; test the same kubeconfig with `kubectl --kubeconfig <file> -n <namespace> get pods` from the Paperclip host and fix connectivity or credentials.",
        ..K8S
    },
    Entry {
        code: "K8S_EXECUTE_NO_LEASE_ID",
        template: "No provider lease ID available for execution.",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "Execute was called with a lease that has no providerLeaseId; returned as stderr with exit code 1.",
        causes: &["The lease expired or was released and is still being used."],
        fix: "Re-acquire a fresh lease for this environment and pass that lease to the execute call.",
        ..K8S
    },
    Entry {
        code: "K8S_EXECUTE_POD_READY_TIMEOUT",
        template: "Sandbox pod did not become Ready within ${effectiveTimeoutMs}ms",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "Before running the command, the Sandbox did not become Ready within the command's timeout; returned as stderr of a timed-out result. A cause the ready-wait can name (an image that cannot be pulled, a container that cannot start, an unschedulable pod past its grace, a Sandbox no controller reconciles) rejects the execute with its own message instead.",
        causes: &[
            "A large image still being pulled, or scheduling that takes longer than the timeout.",
            "A timeout shorter than the 30 s after which a Sandbox without status names the controller, or than `unschedulableGraceSec`.",
        ],
        fix: "Inspect `kubectl -n <namespace> describe sandbox <name>` and events; fix image pulls or capacity, or raise the timeout.",
        ..K8S
    },
    Entry {
        code: "K8S_EXECUTE_POD_NAME_UNRESOLVED",
        template: "Sandbox pod is Ready but podName could not be resolved.",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "The Sandbox reports Ready but its pod cannot be found; returned as stderr with exit code 1.",
        causes: &[
            "The pod is being replaced.",
            "An agent-sandbox controller version that names pods differently.",
        ],
        fix: "Retry; if it persists, check the pods in the tenant namespace and the controller version, and re-acquire the lease.",
        ..K8S
    },
    Entry {
        code: "K8S_FAST_UPLOAD_FLUSH_FAILED",
        template: "fast-upload flush failed: ${err instanceof Error ? err.message : String(err)}",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "Writing a buffered fast upload into the pod failed; returned as stderr of a timed-out result. The text after the colon is the underlying error (often an exec timeout).",
        causes: &[
            "The exec WebSocket dropped or timed out.",
            "The pod was restarted.",
        ],
        fix: "Retry the upload; for large payloads, upload in smaller parts and check that proxies allow long-lived WebSockets.",
        ..K8S
    },
    Entry {
        code: "K8S_NETWORK_EGRESS_DENIED_HINT",
        template: "${stderr.trimEnd()}\\nPaperclip network policy denied or could not route this request.${detail} Request access through ${NETWORK_EGRESS_GRANT_PATH}.\\n",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "The command failed with a network error (could not resolve host, network unreachable, connection timed out…), and the plugin appended a hint: egress from the sandbox is limited by a NetworkPolicy and the destination is probably not granted.",
        causes: &[
            "The destination is not in the adapter's FQDNs, `egressAllowFqdns`/`egressAllowCidrs`, or the task's granted destinations.",
            "With `egressMode: \"standard\"`, FQDN rules cannot be enforced exactly; private ranges are excluded.",
        ],
        fix: "Grant the destination for the task in `executionWorkspaceSettings.networkEgress`, or add it to the environment's `egressAllowFqdns`/`egressAllowCidrs`, then rerun.",
        ..K8S
    },
    Entry {
        code: "K8S_RESUME_SANDBOX_GONE",
        template: "Sandbox CR no longer exists",
        kind: Kind::Returned,
        hooks: RESUME,
        meaning: "The lease cannot be resumed because its Sandbox was deleted; resume returns it as the expiry reason.",
        causes: &["The Sandbox was deleted by hand, by cleanup, or at its hard-stop deadline."],
        fix: "Nothing to repair: Paperclip acquires a fresh lease.",
        ..K8S
    },
    Entry {
        code: "K8S_RESUME_NO_BACKING_POD",
        template: "Sandbox is Ready but no backing pod was found",
        kind: Kind::Returned,
        hooks: RESUME,
        meaning: "The lease cannot be resumed: the Sandbox is Ready but has no pod.",
        causes: &["The pod was deleted and not yet recreated."],
        fix: "Nothing to repair: Paperclip acquires a fresh lease. If it happens often, check the agent-sandbox controller.",
        ..K8S
    },
    Entry {
        code: "K8S_RESUME_POD_GONE",
        template: "Pod ${podName} no longer exists",
        kind: Kind::Returned,
        hooks: RESUME,
        meaning: "The lease cannot be resumed because its pod was deleted.",
        causes: &["Eviction, node drain or manual deletion."],
        fix: "Nothing to repair: Paperclip acquires a fresh lease.",
        ..K8S
    },
    Entry {
        code: "K8S_RESUME_POD_NOT_RUNNING",
        template: "Pod ${podName} is ${terminating ? \"terminating\" : podPhase ?? \"in an unknown phase\"}",
        kind: Kind::Returned,
        hooks: RESUME,
        meaning: "The lease cannot be resumed because its pod is terminating or not Running.",
        causes: &["The pod is being deleted, has failed or succeeded, or the node is unreachable."],
        fix: "Nothing to repair: Paperclip acquires a fresh lease. Check `kubectl describe pod` if pods fail repeatedly.",
        ..K8S
    },
    Entry {
        code: "K8S_RESUME_JOB_GONE",
        template: "Job no longer exists",
        kind: Kind::Returned,
        hooks: RESUME,
        meaning: "A job-backend lease cannot be resumed because its Job was deleted.",
        causes: &["`jobTtlSecondsAfterFinished` cleaned it up, or it was deleted by hand."],
        fix: "Nothing to repair: Paperclip acquires a fresh lease.",
        ..K8S
    },
    Entry {
        code: "K8S_RESUME_JOB_FINISHED",
        template: "Job is ${status.phase}",
        kind: Kind::Returned,
        hooks: RESUME,
        meaning: "A job-backend lease cannot be resumed because its Job has already Succeeded or Failed.",
        causes: &["The Job ran to completion or hit its activity deadline."],
        fix: "Nothing to repair: Paperclip acquires a fresh lease.",
        ..K8S
    },
    Entry {
        code: "K8S_FAST_UPLOAD_BUFFER_CAP",
        template: "Fast upload buffer cap exceeded for ${upload.targetPath}; retry the upload with a smaller payload.",
        kind: Kind::Internal,
        hooks: EXECUTE,
        meaning: "A fast upload exceeded the 100 MiB buffer. This plugin version ignores the decision and runs the command normally, so the text does not reach the host.",
        causes: &["An upload larger than 100 MiB through the fast-upload path."],
        fix: "Upload large files through file sync (onEnvironmentSyncIn) instead.",
        ..K8S
    },
    // ---- C. in-pod script diagnostics --------------------------------------------------------
    Entry {
        code: "K8S_SYNC_SCRIPT_NO_CANONICALIZER",
        template: "no path canonicalizer available",
        kind: Kind::Diagnostic,
        hooks: SYNC,
        meaning: "Exit 40: neither `realpath -- /` nor `readlink -f -- /` works in the pod, and the transfer needs one of them to check paths safely.",
        causes: &["A minimal image (distroless, scratch) without GNU coreutils or BusyBox."],
        fix: "Use a runtime image with GNU coreutils or BusyBox (`realpath` or `readlink -f`); docs/operators.md lists everything an image needs.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_ROOT_UNRESOLVED",
        template: "cannot resolve root",
        kind: Kind::Diagnostic,
        hooks: SYNC,
        meaning: "Exit 41: the workspace remote dir cannot be resolved in the pod.",
        causes: &[
            "The workspace directory does not exist or is not accessible to the container user.",
        ],
        fix: "Check the workspace dir exists in the pod (`kubectl exec … -- ls -ld <remoteCwd>`); re-acquire the lease if it vanished.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_ESCAPE",
        template: "ESCAPE",
        kind: Kind::Diagnostic,
        hooks: SYNC,
        meaning: "Exit 42: a path resolves outside the workspace, usually through a symlink, so the transfer was refused.",
        causes: &[
            "A symlink in the workspace pointing outside it (e.g. to `/tmp` or `/`).",
            "A path replaced by a symlink during the transfer.",
        ],
        fix: "Remove or replace the symlink in the workspace (`find <remoteCwd> -type l`), then sync again.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_EXTRACT_FAILED",
        template: "extract failed",
        kind: Kind::Diagnostic,
        hooks: SYNC_IN,
        meaning: "Exit 43: unpacking the uploaded data in the pod failed.",
        causes: &[
            "The pod's disk (or emptyDir limit) is full.",
            "No `tar` in the image.",
            "The stream was cut short.",
        ],
        fix: "Free space or raise the pod's ephemeral-storage limit, use an image with `tar`, and retry.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_SNAPSHOT_COPY_FAILED",
        template: "snapshot copy failed",
        kind: Kind::Diagnostic,
        hooks: SYNC_OUT,
        meaning: "Exit 43: copying the file to sync out into a staging snapshot failed.",
        causes: &[
            "The pod's disk is full.",
            "The file is not readable by the container user.",
        ],
        fix: "Free space in the pod and check the file's permissions, then retry.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_TAR_FAILED",
        template: "tar failed",
        kind: Kind::Diagnostic,
        hooks: SYNC_OUT,
        meaning: "Exit 43: packing the files to sync out failed in the pod.",
        causes: &[
            "A `tar` that refuses `--no-xattrs`, such as BusyBox's: every sync-out fails this way.",
            "No `tar` in the image.",
            "Unreadable files in the directory.",
        ],
        fix: "Use an image with GNU tar (docs/operators.md lists what an image needs), and make the directory readable by the container user (uid 1000).",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_RENAME_FAILED",
        template: "rename failed",
        kind: Kind::Diagnostic,
        hooks: SYNC_IN,
        meaning: "Exit 44: moving the uploaded file into place failed.",
        causes: &[
            "The target is a directory or read-only.",
            "The target directory is not writable.",
        ],
        fix: "Check the target path in the pod: it must be a writable location, not an existing directory.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_REPLACED",
        template: "REPLACED",
        kind: Kind::Diagnostic,
        hooks: SYNC_OUT,
        meaning: "Exit 45: the source changed (was replaced or removed) between being checked and being opened.",
        causes: &[
            "A process in the pod was rewriting or removing the file while it was synced out.",
        ],
        fix: "Sync out again once the file is no longer being written.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_NOT_REGULAR",
        template: "NOTREG",
        kind: Kind::Diagnostic,
        hooks: SYNC_OUT,
        meaning: "Exit 45: a file sync out points at something that is not a regular file.",
        causes: &["The source is a directory, a device, a FIFO or a socket."],
        fix: "Use `kind: \"directory\"` for directories, or point at the regular file.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_STAGE_MKDIR_FAILED",
        template: "stage mkdir failed",
        kind: Kind::Diagnostic,
        hooks: SYNC,
        meaning: "Exit 46: creating the private staging directory in the workspace (a direct child of the workspace remote dir) failed.",
        causes: &[
            "The workspace (an 8Gi emptyDir) is full, or not writable by the container user.",
        ],
        fix: "Free space in the workspace, and make sure it is writable by uid 1000 (the pod's `fsGroup` does this for the provider's own pods).",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_MKDIR_FAILED",
        template: "mkdir failed",
        kind: Kind::Diagnostic,
        hooks: SYNC_IN,
        meaning: "Exit 46: creating the target directory in the pod failed.",
        causes: &[
            "A file exists where a directory is needed.",
            "Permissions or a read-only filesystem.",
        ],
        fix: "Check the target path's parents in the pod and their permissions.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_OPEN_FAILED",
        template: "open failed",
        kind: Kind::Diagnostic,
        hooks: SYNC,
        meaning: "Exit 46/47: opening a directory in the pod failed.",
        causes: &["The directory vanished or is not accessible to the container user."],
        fix: "Check the directory exists and is accessible in the pod, then retry.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_CD_FAILED",
        template: "cd failed",
        kind: Kind::Diagnostic,
        hooks: SYNC,
        meaning: "Exit 46: changing into the pinned directory failed (the pod may lack `/proc`).",
        causes: &[
            "`/proc` is not mounted or not accessible.",
            "The directory vanished.",
        ],
        fix: "Use a standard container runtime with `/proc` mounted; check the directory exists.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_CHMOD_FAILED",
        template: "chmod failed",
        kind: Kind::Diagnostic,
        hooks: SYNC_IN,
        meaning: "Exit 48: applying the requested file mode failed.",
        causes: &[
            "The container user does not own the file.",
            "A read-only filesystem.",
        ],
        fix: "Omit `mode`, or make the workspace owned by the container user.",
        ..K8S
    },
    // ---- D. config validation ----------------------------------------------------------------
    Entry {
        code: "K8S_CONFIG_AUTH_MISSING",
        template: "kubernetes provider requires one of `inCluster` or `kubeconfig`",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "The config gives the plugin no way to reach a cluster.",
        causes: &[
            "Neither `inCluster: true` nor a `kubeconfig` string is set (or kubeconfig is empty).",
        ],
        fix: "Set `kubeconfig` to the kubeconfig YAML text (or a secret reference holding it), or `inCluster: true` when Paperclip runs in the cluster.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_CIDR_INVALID",
        template: "Invalid CIDR",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "An `egressAllowCidrs` entry is not an IPv4 CIDR (`a.b.c.d/n`).",
        causes: &["A bare IP without `/n`, a hostname, or an IPv6 range."],
        fix: "Write entries as IPv4 CIDRs such as `10.0.0.0/8` or `203.0.113.7/32`; put hostnames in `egressAllowFqdns`.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_SELECTOR_KEY_INVALID",
        template: "paperclipServerPodSelector keys must be valid Kubernetes label keys",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "A key of `paperclipServerPodSelector` is not a valid label key. The selector names the Paperclip server pods (in namespace `paperclip`) that agent pods may call back to on TCP 3100; the egress policies select them by these labels.",
        causes: &["Spaces, upper-case prefixes, a leading `-`, or `:` in the key."],
        fix: "Use valid label keys such as `app` or `app.kubernetes.io/name`, matching the Paperclip server pods' labels (`kubectl -n paperclip get pods --show-labels`).",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_SELECTOR_VALUE_INVALID",
        template: "paperclipServerPodSelector values must be valid Kubernetes label values",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "A value of `paperclipServerPodSelector` is not a valid label value.",
        causes: &["Spaces or special characters, or more than 63 characters."],
        fix: "Use values of at most 63 characters of letters, digits, `-`, `_` and `.`, starting and ending alphanumeric.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_SELECTOR_EMPTY",
        template: "paperclipServerPodSelector must not be empty",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`paperclipServerPodSelector` is `{}`; an empty selector would let agent pods reach every pod of the server namespace on TCP 3100.",
        causes: &["The selector was cleared instead of removed."],
        fix: "Remove the key to use the default `{\"app\": \"paperclip-server\"}`, or set the Paperclip server pods' labels (`kubectl -n paperclip get pods --show-labels`).",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_ADAPTER_TYPE_UNKNOWN",
        template: "adapterType must be one of the known adapter types",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "The config's default `adapterType` is not a built-in adapter and `runtimeImages` names no image for it. Adapters only the `adapters` registry declares cannot be the environment default (as in the original).",
        causes: &[
            "A typo, or a custom adapter from the `adapters` registry used as default.",
            "A custom adapter whose image is not (or is under another key) in `runtimeImages`.",
        ],
        fix: "Set `adapterType` to claude_local, codex_local, gemini_local, cursor_local, opencode_local or pi_local (or remove it), or name the custom adapter's image in `runtimeImages` under exactly that key.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_PATTERN_MISMATCH",
        template: "Invalid",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "A string field does not match its pattern: `namespacePrefix` and `companySlug` must match `^[a-z0-9-]{1,32}$`.",
        causes: &["Upper-case letters, underscores, dots or more than 32 characters."],
        fix: "Use lower-case letters, digits and `-` only, at most 32 characters (e.g. `paperclip-`, `acme`); keep `namespacePrefix` and `companySlug` together within 63 characters, the longest namespace name Kubernetes accepts.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_URL_INVALID",
        template: "Invalid url",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "zod's message for a string that does not parse as a URL. Not raised by the current schema: the original raised it for an `imageRegistry` without a scheme (`ghcr.io/acme`), and its only accepted form, `https://ghcr.io/acme`, then produced the invalid image reference `https://ghcr.io/acme/agent-runtime-claude:…` (pods stuck in `InvalidImageName`). This implementation checks `imageRegistry` by its own rule instead (K8S_CONFIG_IMAGE_REGISTRY_INVALID), which accepts `ghcr.io/acme` and drops a scheme from the references.",
        causes: &[
            "A config validated by the original plugin (or a worker older than this rule) with an `imageRegistry` without scheme.",
        ],
        fix: "Write `imageRegistry` as the registry host with an optional path, `ghcr.io/acme` (a scheme, `https://ghcr.io/acme`, is accepted too and left out of the image references); with the original plugin, whose only accepted form yields an invalid reference, name the images in full instead.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_TYPE_MISMATCH",
        template: "Expected ${expected}, received ${received}",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "A config field has the wrong JSON type (the issue's `path` names the field).",
        causes: &[
            "A number or boolean written as a string (`\"3600\"`, `\"true\"`).",
            "A single string where a list is expected (`imagePullSecrets`, `egressAllowFqdns`, `adapters`).",
        ],
        fix: ZOD_TYPE_FIX,
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_NOT_OBJECT",
        template: "Expected object, received ${received}",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "The environment config as a whole, or one of its maps (`defaultResources`, `paperclipServerPodSelector`, `serviceAccountAnnotations`), is not an object.",
        causes: &["A config stored as a JSON string instead of an object, or null."],
        fix: "Store the environment config as a JSON object, e.g. `{\"kubeconfig\": \"…\", \"backend\": \"sandbox-cr\"}`.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_NOT_INTEGER",
        template: "Expected integer, received float",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`jobTtlSecondsAfterFinished` or `podActivityDeadlineSec` has a fractional value.",
        causes: &["A value like `3600.5` or `0.5`."],
        fix: "Use a whole number of seconds.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_NEGATIVE",
        template: "Number must be greater than or equal to 0",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`jobTtlSecondsAfterFinished` is negative.",
        causes: &["A negative TTL."],
        fix: "Use 0 or more seconds (default 900), or remove the key.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_NOT_POSITIVE",
        template: "Number must be greater than 0",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`podActivityDeadlineSec` is zero or negative.",
        causes: &["A zero or negative deadline."],
        fix: "Use a positive number of seconds (default 3600), or remove the key.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_EGRESS_MODE_INVALID",
        template: "Invalid enum value. Expected 'cilium' | 'standard', received '${value}'",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`egressMode` is neither `cilium` nor `standard`.",
        causes: &["A typo or different capitalisation (`Cilium`)."],
        fix: "Set `egressMode` to `standard` (Kubernetes NetworkPolicy) or `cilium` (requires the Cilium CNI).",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_BACKEND_INVALID",
        template: "Invalid enum value. Expected 'sandbox-cr' | 'job', received '${value}'",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`backend` is neither `sandbox-cr` nor `job`.",
        causes: &["A typo (`sandbox`, `jobs`) or different capitalisation."],
        fix: "Set `backend` to `sandbox-cr` (the default; needs the agent-sandbox controller). `job` passes this check, but validation refuses it for a stored environment (K8S_JOB_BACKEND_NO_LOGIN_PTY).",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_STRING_EMPTY",
        template: "String must contain at least 1 character(s)",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "An `adapters[]` entry has an empty `adapterType`.",
        causes: &["`\"adapterType\": \"\"` in the adapter registry."],
        fix: "Give every `adapters[]` entry a non-empty `adapterType`.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_UNRECOGNIZED_KEYS",
        template: "Unrecognized key(s) in object: '${key}'[, '${key2}'…]",
        pattern: Some("Unrecognized key(s) in object: '${keys}"),
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "An `adapters[]` entry has keys the registry does not know (entries are strict; unknown top-level config keys, by contrast, are silently dropped).",
        causes: &[
            "A typo such as `image` instead of `runtimeImage`, or `enable` instead of `enabled`.",
        ],
        fix: "Remove or rename the listed keys in the `adapters[]` entry.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_BOOLEAN_AS_STRING",
        template: "Expected boolean, received string",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "A boolean field (`inCluster`, or `adapters[].enabled`) is written as a string.",
        causes: &["`\"true\"` / `\"false\"` in quotes."],
        fix: "Write booleans unquoted: `true` or `false`.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_REQUIRED",
        template: "Required",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "A required key is missing; in this schema that is an `adapters[]` entry without `adapterType`.",
        causes: &["An `adapters[]` entry that only sets `runtimeImage`."],
        fix: "Add `adapterType` to every `adapters[]` entry.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_INVALID_INPUT",
        template: "Invalid input",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "zod's generic message for a value that matches none of several allowed shapes. Not reachable with the current schema.",
        causes: &["A config value of an unexpected shape."],
        fix: "Compare the field named in the issue's `path` with the configuration reference and correct its shape.",
        ..K8S
    },
    // ---- E. warnings -------------------------------------------------------------------------
    Entry {
        code: "K8S_EGRESS_FQDN_FALLBACK_PUBLIC",
        template: "egressMode=standard cannot enforce FQDN-based egress rules (Kubernetes NetworkPolicy is CIDR-only). To keep the configured FQDNs reachable (${totalFqdns.join(\", \")}) without operator intervention, the plugin will allow public IPv4 egress on TCP 80/443 with private/link-local/loopback/multicast ranges excluded. This is broader than exact FQDN allow-listing — switch egressMode to \"cilium\" (requires Cilium CNI) for precise enforcement, or set egressAllowCidrs explicitly to override the fallback.",
        kind: Kind::Warning,
        hooks: &[on(ValidateConfig)],
        meaning: "Validation warning: with standard NetworkPolicies the plugin cannot allow hostnames, so to keep the listed FQDNs reachable it will allow all public IPv4 on ports 80/443.",
        causes: &[
            "`egressMode: \"standard\"` with adapter or configured FQDNs and no `egressAllowCidrs`.",
        ],
        fix: "Accept the broader egress, or switch to `egressMode: \"cilium\"` (Cilium CNI) for exact FQDN rules, or list the destinations' CIDRs in `egressAllowCidrs`.",
        ..K8S
    },
    Entry {
        code: "K8S_EGRESS_FQDN_CIDR_ONLY",
        template: "egressMode=standard cannot enforce FQDN-based egress rules. The following FQDNs are reachable only via the operator-supplied egressAllowCidrs: ${totalFqdns.join(\", \")}. Switch egressMode to \"cilium\" (requires Cilium CNI) for exact FQDN allow-listing.",
        kind: Kind::Warning,
        hooks: &[on(ValidateConfig)],
        meaning: "Validation warning: with standard NetworkPolicies, the listed FQDNs are reachable only if their addresses fall inside `egressAllowCidrs`.",
        causes: &["`egressMode: \"standard\"` with FQDNs and explicit `egressAllowCidrs`."],
        fix: "Make sure `egressAllowCidrs` covers the FQDNs' addresses, or switch to `egressMode: \"cilium\"`.",
        ..K8S
    },
    Entry {
        code: "K8S_EGRESS_FQDN_FALLBACK_PUBLIC_LOG",
        template: "[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules; falling back to public-IPv4 (TCP 80/443) with private/link-local ranges excluded so the configured FQDNs (${totalFqdnsForWarn.join(\", \")}) remain reachable. Switch egressMode to \"cilium\" for exact FQDN allow-listing.",
        kind: Kind::Warning,
        hooks: ACQUIRE,
        meaning: "Worker log warning at acquire: the lease's egress policy allows all public IPv4 on ports 80/443 because hostnames cannot be enforced.",
        causes: &["`egressMode: \"standard\"` with FQDNs and no `egressAllowCidrs`."],
        fix: "Switch to `egressMode: \"cilium\"` for exact FQDN rules, or set `egressAllowCidrs`.",
        ..K8S
    },
    Entry {
        code: "K8S_EGRESS_FQDN_CIDR_ONLY_LOG",
        template: "[plugin-kubernetes] egressMode=standard cannot enforce FQDN-based egress rules. The following FQDNs are reachable only via operator-supplied egressAllowCidrs: ${totalFqdnsForWarn.join(\", \")}. Switch egressMode to \"cilium\" for exact FQDN allow-listing.",
        kind: Kind::Warning,
        hooks: ACQUIRE,
        meaning: "Worker log warning at acquire: the listed FQDNs are reachable only through `egressAllowCidrs`.",
        causes: &["`egressMode: \"standard\"` with FQDNs and explicit `egressAllowCidrs`."],
        fix: "Make sure `egressAllowCidrs` covers the FQDNs' addresses, or switch to `egressMode: \"cilium\"`.",
        ..K8S
    },
    Entry {
        code: "K8S_LEASE_END_NOT_MOVED",
        template: "[plugin-kubernetes] Could not move the end of Sandbox ${namespace}/${name} to ${shutdownTime} (${error}); it keeps its previous end, and a later call on the lease retries. Check that the provider may patch sandboxes.agents.x-k8s.io (docs/rbac).",
        kind: Kind::Warning,
        hooks: &[
            on(ResumeLease),
            on(Execute),
            on(SyncIn),
            on(SyncOut),
            on(LoginPtyOpen),
        ],
        meaning: "Worker log warning (issue #38): every Sandbox carries its own end (`spec.shutdownTime`, `shutdownPolicy: Delete`), after which the agent-sandbox controller deletes it with its pod, and the garbage collector its Secret and egress policies. A hook that uses the lease moves that end forward first (when less than `podActivityDeadlineSec` would be left after the hook's own bound) with a merge patch of the Sandbox; this one failed. The hook itself goes on and answers as usual; the Sandbox keeps the end it had, so a lease used for longer than that without a successful move is deleted under its user. After a failure the next move is tried no sooner than 30 s later (or a quarter of `podActivityDeadlineSec`). `${error}` is the API server's answer or the transport error.",
        causes: &[
            "RBAC from before issue #38: the provider's identity lacks `patch` on `sandboxes.agents.x-k8s.io` (HTTP-Code: 403).",
            "The API server did not answer within 5 s, or refused the request (a webhook, a 5xx).",
        ],
        fix: "Apply docs/rbac/clusterrole.yaml again (it grants `patch` on sandboxes) and bind it to the provider's identity; the probe names the missing permission. A transient API failure needs nothing: the next call on the lease retries.",
        origin: Origin::Addition(LEASE_END),
        ..K8S
    },
    // ---- additions: messages a hook surfaces that the contract list leaves out --------------
    Entry {
        code: "K8S_ACQUIRE_CLEANUP_INCOMPLETE",
        template: "Kubernetes sandbox lease acquisition failed and cleanup was incomplete.",
        hooks: ACQUIRE,
        meaning: "A step of the acquire after the Sandbox or Job was created failed (a policy, the per-run Secret, the pod lookup), and deleting what the acquire had created failed too. The underlying errors are left out on purpose: a Secret error can echo the Secret's contents.",
        causes: &[
            "The API server failing or refusing both the acquire step and the deletes (RBAC without `delete` on sandboxes/jobs or secrets).",
            "A network failure in the middle of the acquire.",
        ],
        fix: "Look in the tenant namespace for a `pc-…` Sandbox or Job and its `-env` Secret with no lease in Paperclip, delete them (`kubectl delete sandbox,job,secret -l paperclip.io/run-id=<run>`), check the plugin identity may delete them, then retry.",
        origin: Origin::Addition(
            "The acquire partial-failure cleanup of the later upstream generation G-sync/egress (kubernetes-errors.md G1, asserted by acquire-cleanup.test.ts @ f2a3b6ea).",
        ),
        ..K8S
    },
    Entry {
        code: "K8S_EXIT_137_NOTE",
        kind: Kind::Returned,
        template: "${stderr}Exit code 137 usually means the process was killed with SIGKILL, most often by the out-of-memory killer after the container exceeded its memory limit. The Kubernetes exec status reports no signal, so this is not proof of a kill.",
        hooks: EXECUTE,
        meaning: "Appended to a command's stderr when it exits with 137 (128 + SIGKILL): the usual cause on Kubernetes is the OOM killer at the container memory limit. Exec reports no signal, so `signal` stays null and this is a hint, not proof.",
        causes: &[
            "The command (or the container) used more memory than its limit.",
            "Something killed the process with SIGKILL, or the command itself exited 137.",
        ],
        fix: "Check `kubectl describe pod` for `OOMKilled`; raise `defaultResources.limits.memory` in the environment config (the tenant LimitRange allows at most 8Gi per container, and the ResourceQuota 40Gi of limits per tenant), or make the command use less memory.",
        origin: Origin::Addition(
            "G-exec2 (plugin-execute.test @ 8cc93d95) requires a note naming SIGKILL and the memory limit and saying the status reports no signal; its exact upstream text is not available, so these words are this implementation's.",
        ),
        ..K8S
    },
    Entry {
        code: "K8S_EXIT_143_NOTE",
        kind: Kind::Returned,
        template: "${stderr}Exit code 143 usually means the process was stopped with SIGTERM, for example because its pod is being deleted or evicted. The Kubernetes exec status reports no signal, so this is not proof of a termination.",
        hooks: EXECUTE,
        meaning: "Appended to a command's stderr when it exits with 143 (128 + SIGTERM): the usual cause is the pod being stopped, deleted or evicted. Exec reports no signal, so `signal` stays null and this is a hint, not proof.",
        causes: &[
            "The pod is being deleted or evicted, or its deadline ended it.",
            "The command itself exited 143.",
        ],
        fix: "Check the pod's events (`kubectl describe pod`) for an eviction or deletion; acquire a new lease if the pod is gone.",
        origin: Origin::Addition(
            "G-exec2 (plugin-execute.test @ 8cc93d95) requires a note naming SIGTERM; its exact upstream text is not available, so these words are this implementation's.",
        ),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_REACHABLE",
        kind: Kind::Returned,
        template: "Kubernetes cluster reachable. Tenant namespace: ${namespace}.",
        hooks: &[on(Probe)],
        meaning: "The first line of the probe's summary when the API server answered its pod list (a missing tenant namespace counts as reachable) and every check after it passed (K8S_PROBE_CHECKS_FAILED otherwise): the Sandbox API, every permission the config needs, the tenant namespace, the adapter and its runtime images, one line each after this one. It names the tenant namespace leases will use.",
        causes: &["A reachable cluster, working credentials, and a config the cluster can run."],
        fix: "Nothing to fix; `paperclip-sandbox check --deep` also runs one whole lease with the adapter's probe command.",
        origin: Origin::Addition(SUMMARY),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_CHECKS_FAILED",
        kind: Kind::Returned,
        template: "Kubernetes cluster reachable, but ${failed} of ${total} checks failed. Tenant namespace: ${namespace}.",
        hooks: &[on(Probe)],
        meaning: "The first line of the probe's summary (with `ok: false`) when the API server answered but a check failed: each failed check has its own line below (the Sandbox API, a permission missing, the tenant namespace, an adapter or a runtime image), and `metadata.checks` lists every check with `ok`. A lease would fail on this cluster with this config.",
        causes: &[
            "agent-sandbox not installed (backend sandbox-cr).",
            "RBAC without a permission the provider needs (docs/rbac/).",
            "A tenant namespace being deleted, or one that does not exist and may not be created.",
            "A runtime image that is not a valid reference.",
        ],
        fix: "Read the lines after this one and fix each (`paperclip-sandbox explain` on a line explains it); apply docs/rbac/clusterrole.yaml with a binding (docs/rbac/in-cluster.yaml or kubeconfig-user.yaml) for permissions, then probe again.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_SANDBOX_API_SERVED",
        kind: Kind::Returned,
        template: "Sandbox API agents.x-k8s.io: served in ${versions}; leases use ${version}.",
        hooks: &[on(Probe)],
        meaning: "A probe line: the cluster serves the agent-sandbox API group in these versions (`GET /apis`), and sandbox-cr leases will be created with the one named (v1beta1 preferred, v1alpha1 otherwise).",
        causes: &["agent-sandbox installed (its CRDs serve `agents.x-k8s.io`)."],
        fix: "Nothing to fix; sandbox-cr leases of this config use the version named.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_SANDBOX_API_NOT_INSTALLED",
        kind: Kind::Returned,
        template: "Sandbox API agents.x-k8s.io: not served, so the agent-sandbox CRDs are not installed on this cluster. Install kubernetes-sigs/agent-sandbox (v1.0.x), or set backend: \"job\".",
        hooks: &[on(Probe)],
        meaning: "A probe line (`ok: false`): discovery (`GET /apis`) does not list `agents.x-k8s.io`, so no Sandbox can be created; an acquire on the sandbox-cr backend would fail with K8S_SANDBOX_API_NOT_SERVED.",
        causes: &[
            "kubernetes-sigs/agent-sandbox (its CRDs and controller) is not installed.",
            "The kubeconfig points at another cluster than the one with agent-sandbox.",
        ],
        fix: "Install agent-sandbox v1.0.x (docs/operators.md) and check `kubectl api-versions | grep agents.x-k8s.io`; or run leases as Jobs (`backend: \"job\"` in a hook's config).",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_SANDBOX_API_UNKNOWN",
        kind: Kind::Returned,
        template: "Sandbox API agents.x-k8s.io: could not be discovered: ${error}",
        hooks: &[on(Probe)],
        meaning: "A probe line (`ok: false`): the discovery request (`GET /apis`) failed, so whether the cluster serves the Sandbox API is unknown; the API server's error follows on one line.",
        causes: &[
            "RBAC that removed the default discovery access (`get` on the non-resource URL `/apis`).",
            "The API server failing or not answering within the probe's bound.",
        ],
        fix: "Read the error; grant `get` on `/apis` (docs/rbac/clusterrole.yaml) or check the API server, then probe again.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_SANDBOX_API_NOT_USED",
        kind: Kind::Returned,
        template: "Sandbox API: not used by backend \"job\" (each run is a batch/v1 Job, run by the cluster's own Job controller; no agent-sandbox install is needed).",
        hooks: &[on(Probe)],
        meaning: "A probe line for `backend: \"job\"`: the job backend creates batch/v1 Jobs, which every cluster serves, so the probe makes no discovery request; the permission lines check the Job permissions instead.",
        causes: &["A config with `backend: \"job\"`."],
        fix: "Nothing to fix; the permission lines check what the job backend needs instead.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_PERMISSIONS_GRANTED",
        kind: Kind::Returned,
        template: "Permissions: all ${count} the config needs are granted.",
        hooks: &[on(Probe)],
        meaning: "A probe line: every permission the config's backend and egress mode need (the list in crates/kubernetes/src/cluster/permissions.rs, the rules of docs/rbac/clusterrole.yaml), asked one verb and resource at a time with a SelfSubjectAccessReview (in the tenant namespace for namespaced ones), is granted to the probe's credentials.",
        causes: &["Credentials bound to docs/rbac/clusterrole.yaml, or broader."],
        fix: "Nothing to fix; apply docs/rbac/clusterrole.yaml again when the plugin is upgraded.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_PERMISSIONS_PARTLY_GRANTED",
        kind: Kind::Returned,
        template: "Permissions: ${granted} of ${count} the config needs are granted; each one missing follows.",
        hooks: &[on(Probe)],
        meaning: "A probe line (`ok: false`): some permissions the config needs are not granted (one K8S_PROBE_PERMISSION_MISSING line each follows) or could not be asked (K8S_PROBE_PERMISSIONS_UNCHECKED).",
        causes: &["RBAC written by hand, or an older version of docs/rbac/clusterrole.yaml."],
        fix: "Apply docs/rbac/clusterrole.yaml and bind it to the provider's identity (docs/rbac/in-cluster.yaml or kubeconfig-user.yaml), then probe again.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_PERMISSION_MISSING",
        kind: Kind::Returned,
        template: "Permission missing: ${verb} ${resource} ${place}, to ${why}.",
        hooks: &[on(Probe)],
        meaning: "A probe line (`ok: false`): the API server's authorizer refuses this verb on this resource (with its group, as kubectl names it: `pods/exec`, `jobs.batch/status`, `sandboxes.agents.x-k8s.io`, or a URL such as `/apis`), in the tenant namespace or cluster-wide, to the probe's credentials; the provider needs it for what the line says, and the hook that makes the request would fail with the server's 403.",
        causes: &[
            "A ClusterRole without the rule, or a Role bound only in other namespaces (tenant namespaces are made per company, so the grant must be cluster-wide).",
            "An admission or authorization webhook that refuses it.",
        ],
        fix: "Add the rule from docs/rbac/clusterrole.yaml (or apply the file) and bind it cluster-wide; check with `kubectl auth can-i <verb> <resource> -n <namespace> --as <identity>` (a subresource as `kubectl auth can-i create pods --subresource=exec …`).",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_PERMISSIONS_UNCHECKED",
        kind: Kind::Returned,
        template: "Permissions: ${count} could not be checked: ${error}",
        hooks: &[on(Probe)],
        meaning: "A probe line (`ok: false`): this many SelfSubjectAccessReviews failed with this error (one line per distinct error), so whether those permissions are granted is unknown.",
        causes: &[
            "RBAC that removed the default `create selfsubjectaccessreviews` every authenticated user has.",
            "The API server failing or not answering within the probe's bound (K8S_API_TIMEOUT).",
        ],
        fix: "Read the error; grant `create` on `selfsubjectaccessreviews.authorization.k8s.io` (docs/rbac/clusterrole.yaml) or check the API server, then probe again.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_TENANT_NAMESPACE_EXISTS",
        kind: Kind::Returned,
        template: "Tenant namespace ${namespace}: exists.",
        hooks: &[on(Probe)],
        meaning: "A probe line: the company's tenant namespace is there; leases reuse it (and what it holds: first write wins).",
        causes: &["A company that has had a lease before, or a namespace made by hand."],
        fix: "Nothing to fix; leases reuse the namespace and what it holds.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_TENANT_NAMESPACE_CREATABLE",
        kind: Kind::Returned,
        template: "Tenant namespace ${namespace}: does not exist yet; the first lease creates it.",
        hooks: &[on(Probe)],
        meaning: "A probe line: the tenant namespace is missing, and the credentials may create namespaces, so the first acquire provisions it (with its ServiceAccount, Role, quota, limits and policies).",
        causes: &["A company's first environment."],
        fix: "Nothing to fix; the first acquire creates and provisions the namespace.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_TENANT_NAMESPACE_NOT_CREATABLE",
        kind: Kind::Returned,
        template: "Tenant namespace ${namespace}: does not exist, and these credentials may not create it; create it, or grant create on namespaces.",
        hooks: &[on(Probe)],
        meaning: "A probe line (`ok: false`): the tenant namespace is missing and the credentials may not create namespaces, so the first acquire would fail with the server's 403.",
        causes: &["RBAC without `create` on namespaces (or it could not be asked)."],
        fix: "Create the namespace (`kubectl create namespace <name>`) or grant `create` on namespaces (docs/rbac/clusterrole.yaml), then probe again.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_TENANT_NAMESPACE_TERMINATING",
        kind: Kind::Returned,
        template: "Tenant namespace ${namespace}: is being deleted; leases fail until it is gone, then the next lease creates it again.",
        hooks: &[on(Probe)],
        meaning: "A probe line (`ok: false`): the tenant namespace is in phase Terminating, so the API server refuses new objects in it until the namespace controller has removed it.",
        causes: &[
            "A namespace deleted by hand or by a cleanup job, with objects (or finalizers) still going.",
        ],
        fix: "Wait until `kubectl get namespace <name>` answers NotFound (check for stuck finalizers if it does not), then probe again.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_TENANT_NAMESPACE_UNREADABLE",
        kind: Kind::Returned,
        template: "Tenant namespace ${namespace}: could not be read: ${error}",
        hooks: &[on(Probe)],
        meaning: "A probe line (`ok: false`): reading the tenant namespace failed with this error (on one line), so whether it exists is unknown; acquire reads it first and would fail the same way.",
        causes: &[
            "RBAC without `get` on namespaces (the permission lines name it too).",
            "The API server failing or not answering within the probe's bound.",
        ],
        fix: "Read the error; grant `get` on namespaces or check the API server, then probe again.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_PROBE_RUNTIME_IMAGE_VALID",
        kind: Kind::Returned,
        template: "Runtime image for adapter \"${adapterType}\": ${image} is a valid reference.",
        hooks: &[on(Probe)],
        meaning: "A probe line, one per adapter the config can run: the image a run of it would use (`runtimeImages`, else the table's image moved to `imageRegistry`) follows the image-reference grammar. The probe does not pull it: `paperclip-sandbox check --deep` runs a lease with it.",
        causes: &["A valid image reference."],
        fix: "Nothing to fix; if the image cannot be pulled, a lease fails at once naming the kubelet's reason.",
        origin: Origin::Addition(PROBE_CHECKS),
        ..K8S
    },
    Entry {
        code: "K8S_HEALTHY",
        kind: Kind::Returned,
        template: "Kubernetes sandbox provider plugin healthy",
        hooks: &[on(Health)],
        meaning: "The health check's message: the worker runs; it makes no cluster call.",
        causes: &["A running Kubernetes worker."],
        fix: "Nothing to fix; probe an environment to check the cluster.",
        origin: Origin::Addition(SUMMARY),
        ..K8S
    },
    Entry {
        code: "K8S_API_HTTP_ERROR",
        template: "HTTP-Code: ${code}\nMessage: ${detail}",
        hooks: K8S_CLIENT,
        meaning: "A Kubernetes API request failed; `${code}` is the HTTP status and `${detail}` the API server's own message (its `Status` message, else its reason, else the status's name). This is the original's client-node `ApiException` text without the response body and headers, which this implementation leaves out. Where a hook absorbs a status (a 404 on a delete, a 409 on a tenant object), it is not shown.",
        causes: &[
            "403: the plugin's identity lacks a permission; the message names the verb, the resource and the namespace.",
            "404 on a `sandboxes` request: the agent-sandbox CRD is missing or was removed.",
            "422: the cluster refused an object: `defaultResources` above the tenant LimitRange (4 CPU, 8Gi), Pod Security `restricted`, or a namespace name over 63 characters.",
            "401: expired or revoked credentials.",
            "5xx: the API server, or a proxy in front of it, is failing.",
        ],
        fix: "Read the text after `Message:`. For a 403, grant what it names (docs/rbac/ has the whole role, docs/operators.md how to bind it); for a 422, correct the config field it names; for a 401, renew the kubeconfig's credentials; for a 5xx, check the API server and anything in front of it, then retry.",
        origin: Origin::Addition(CLIENT),
        ..K8S
    },
    Entry {
        code: "K8S_API_REQUIRED_PARAMETER",
        template: "Required parameter ${key} was null or undefined",
        hooks: K8S_CLIENT,
        meaning: "An API request was about to be made without a name or namespace it needs; the text is `@kubernetes/client-node`'s own check, as the original raises it.",
        causes: &["Lease metadata whose namespace or names were removed or set to null."],
        fix: "Use the lease as the provider returned it, or acquire a new one.",
        origin: Origin::Addition(CLIENT),
        ..K8S
    },
    Entry {
        code: "K8S_API_UNKNOWN_STATUS",
        template: "Unknown API Status Code!",
        hooks: K8S_CLIENT,
        meaning: "The API server answered an error with an HTTP status that has no standard name and a body without a message or reason; the text ends `HTTP-Code: <n>\\nMessage: Unknown API Status Code!`, as the original's client words it.",
        causes: &["Something other than a Kubernetes API server at the kubeconfig's server URL."],
        fix: "Check the kubeconfig's `server` URL points at the cluster's API server.",
        origin: Origin::Addition(CLIENT),
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_TAR_FAILED",
        template: "Command failed: tar ${args}\n${stderr}",
        hooks: SYNC,
        meaning: "The host's `tar` (on the Paperclip server, which packs every sync-in) failed; the text is Node's `execFile` error as the original surfaces it, with tar's stderr.",
        causes: &[
            "A source path on the host that cannot be read.",
            "A host `tar` other than GNU tar, which refuses `--no-xattrs` or `--totals`.",
        ],
        fix: "Read tar's message after the command line; fix the host path's permissions, or put GNU tar first on the Paperclip server's PATH.",
        origin: Origin::Addition(
            "The original runs the host's tar through Node's execFile; its error text reaches the host unchanged, as every error owned by a dependency does.",
        ),
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SOURCE_IS_DIRECTORY",
        template: "EISDIR: illegal operation on a directory, copyfile '${path}'",
        hooks: &[on(SyncIn)],
        meaning: "A `kind: file` sync-in mapping names a directory on the host; the text is Node's `copyFile` error, as the original surfaces it.",
        causes: &["A directory mapped with `kind: \"file\"`."],
        fix: "Map directories with `kind: \"directory\"`.",
        origin: Origin::Addition(
            "Node's fs error for copying a directory as a file in the original's sync-in, which reaches the host unchanged, as every error owned by a dependency does.",
        ),
        ..K8S
    },
    Entry {
        code: "K8S_API_TIMEOUT",
        template: "Kubernetes API server did not answer within ${ms}ms; check that the cluster's API server is up and reachable, then retry.",
        hooks: &[
            on(Probe),
            on(AcquireLease),
            on(ResumeLease),
            on(ReleaseLease),
            on(DestroyLease),
            on(Execute),
            on(SyncIn),
            on(SyncOut),
            on(LoginPtyOpen),
        ],
        meaning: "A Kubernetes API request of the hook got no reply before the hook's bound: the call's `timeoutMs` (`config.timeoutMs`) kept within a floor and a cap per hook so the reply reaches the host before its own deadline (acquire at least 10 s, 20 s without a timeout, and at most 5 s more to delete what it had created; resume at least 25 s, 25 s without a timeout; release and destroy 10–25 s; probe 10–25 s). An acquire cut this way still deletes what it had created (else it fails with `K8S_ACQUIRE_CLEANUP_INCOMPLETE`; a workload create cut this way is looked up by its name and deleted, else it fails with `K8S_ACQUIRE_CREATE_UNCONFIRMED`); a probe reports it in `metadata.error` when its pod list is cut, else on the lines of the checks it cut; a resume reports it as the `reason` of a lease it cannot resume; a destroy rejects with `Failed to delete one or more Kubernetes lease resources`, this message among its `errors`. Execute, sync and a login open bound the lookups before their stream (the Sandbox API discovery and the pod lookup): execute by what is left of its `timeoutMs` (at least 5 s, the original's exec floor), sync by `config.timeoutMs` (at least 10 s, 25 s without one), a login open by what its 20 s readiness wait leaves of 25 s (at least 1 s each), which also bounds the upgrade of its terminal's exec. Their readiness waits end on their own timeout instead, with the contract's readiness message, and an exec's upgrade is under the exec's watchdog.",
        causes: &[
            "An API server (or a proxy or load balancer in front of it) that accepts connections and never answers: overloaded, stuck etcd, a half-open connection.",
            "A webhook on the request path that hangs.",
        ],
        fix: "Check the API server's health (`kubectl get --raw /readyz`) and anything between the worker and it, then retry; raise the environment's `timeoutMs` if the cluster is only slow.",
        origin: Origin::Addition(BEYOND_ORIGINAL),
        ..K8S
    },
    Entry {
        code: "K8S_STREAM_EXEC_CLOSED",
        template: "execInPodStreaming connection closed before the command's exit status (pod=${podName}, container=${containerName}, cmd0=${command[0] ?? \"\"}): the API server or the connection to it went away in the middle of the transfer, which did not finish; retry the sync once the cluster answers.",
        hooks: SYNC,
        meaning: "A file-sync transfer (or post-upload command) lost its exec stream before the pod's command reported its exit status: the connection closed, with or without a close frame. The sync fails at once (the original waited for its watchdog, `podActivityDeadlineSec`, an hour by default). Nothing of a cut sync-out is extracted on the host, and its temp dir is removed; a cut sync-in may have left part of its archive extracted in the pod.",
        causes: &[
            "The API server restarted or stopped (an upgrade, a crash) during the transfer.",
            "A proxy or load balancer between the worker and the API server closed the long-lived WebSocket (an idle or connection-age limit).",
            "The network dropped the connection, or the node's kubelet stopped while it proxied the exec.",
        ],
        fix: "Check the API server (`kubectl get --raw /readyz`) and anything in front of it (timeouts for long-lived WebSockets), then sync again; the lease itself is unaffected.",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_ACQUIRE_CREATE_UNCONFIRMED",
        template: "Kubernetes ${kind} ${namespace}/${name} may have been created: its create got no clear answer, and looking it up or deleting it failed too; delete it if it exists (kubectl delete ${resource} -n ${namespace} ${name}).",
        hooks: ACQUIRE,
        meaning: "The acquire's create of its Sandbox (`${resource}` `sandboxes.agents.x-k8s.io`) or Job (`jobs`) failed in a way that does not prove nothing was made: a 5xx, a connection that dropped before the reply, no reply within the acquire's bound, a 409 on its new name (kube-rs's client had retried a create answered 503 or 504, whose first attempt made it), or a reply without the object's UID. The acquire then reads the object by the name it was sent with and deletes it when it carries the labels it was sent with (its pod, Secret and policies go with it); here that lookup or delete failed too, within its 5 s, so the object may still exist, with a pod that runs until its deadline. When the lookup and delete succeed, the acquire rejects with the create's own error instead, and nothing is left.",
        causes: &[
            "An API server that failed the create after storing the object and then failed the lookup too (restarting, overloaded, etcd trouble).",
            "The connection to the API server dropped during the create and stayed down.",
            "RBAC that allows `create` but not `get` or `delete` on sandboxes (or jobs).",
        ],
        fix: "Run the `kubectl delete` in the message once the cluster answers (`kubectl get ${resource} -n ${namespace} ${name}` shows whether it exists), check the API server's health, and make sure the plugin identity may get and delete sandboxes and jobs (docs/rbac/); then retry the run.",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_EXECUTE_CANCELLED",
        template: "Kubernetes command was cancelled: the plugin worker is shutting down.",
        hooks: EXECUTE,
        meaning: "The host shut the plugin worker down while this execute ran. Shutdown answers every execute in flight with this message before it returns, and ends each command they had started in its pod (one kill exec per pod: `TERM` to the command's process group, `KILL` after 2 s), within the host's 10 s shutdown drain; the original left them unanswered (the host reported the worker stream closed) and running. A kill exec that cannot reach the cluster is given up after 5 s, and that command runs on until the pod ends. An execute that arrives after shutdown began gets this message at once.",
        causes: &[
            "The Paperclip server stopped or restarted, or it restarted the plugin (an upgrade, a config change).",
        ],
        fix: "Run the command again once the worker is back; the lease is unaffected and can be resumed.",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_CANCELLED",
        template: "Kubernetes file sync was cancelled: the plugin worker is shutting down.",
        hooks: SYNC,
        meaning: "The host shut the plugin worker down while this sync ran. Shutdown answers every sync in flight with this message before it returns; the sync's exec streams close (its in-pod `tar` ends with them) and its temp dir on the host is removed. A sync-out extracts nothing; a sync-in may have left part of its archive extracted in the pod. A sync that arrives after shutdown began gets this message at once.",
        causes: &[
            "The Paperclip server stopped or restarted, or it restarted the plugin (an upgrade, a config change).",
        ],
        fix: "Sync again once the worker is back; the lease is unaffected and can be resumed.",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_EXEC_CONNECTION_CLOSED",
        template: "execInPod connection closed before the command's exit status (pod=${podName}, container=${containerName}, cmd0=${cmd0}): the API server, the node or the connection to them went away while the command ran; it was not re-run, and it was ended if the pod could still be reached.",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "The exec's connection ended (or failed) after the command had started and before its exit status came. Execute returns it at once as `stderr` of a result with `exitCode: null` and `timedOut: false` (the original waited for its watchdog, up to `timeoutMs`, and reported it as a timeout); the output streamed so far reached the host live, the result's stdout is empty. The command's process group is then sent TERM and KILL by a second exec, which succeeds only if the pod can still be reached. When the pod turns out to have been deleted, the result says that instead (`K8S_EXEC_POD_DELETED_NOTE`). `${cmd0}` is the command's first word (`/bin/sh` with stdin).",
        causes: &[
            "The API server restarted (an upgrade) or its connection to the kubelet broke.",
            "The kubelet or the container runtime on the pod's node restarted or stopped answering.",
            "A proxy, load balancer or network path between the worker and the API server closed the connection.",
        ],
        fix: "Check the API server's and the node's health (`kubectl get nodes`, the kubelet's log); run the command again once the cluster answers (it was not re-run, and it may have done part of its work).",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_EXEC_REFUSED",
        template: "execInPod was refused by the API server with HTTP ${status} (pod=${podName}, container=${containerName}); the command did not start: ${message}",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "The API server answered the exec's WebSocket upgrade with an HTTP error status, so the command never started; `${message}` is the API server's own Status message. Execute returns it at once as `stderr` of a result with `exitCode: null` and `timedOut: false` (the original reported it as a timed-out result). When the refusal comes from the lease's pod being gone, terminating or not running yet (an eviction the Sandbox's controller is repairing: `404 … not found`, `500 container not found`), the execute first waits, within its own `timeoutMs`, for the Sandbox's new pod and runs the command there once; this message is what is left when the pod is running and the exec is still refused, or the second exec is refused too.",
        causes: &[
            "The provider's identity may not create `pods/exec` (HTTP 403; docs/rbac).",
            "An admission webhook or policy engine denies exec into the pod.",
            "The kubelet refused the exec (HTTP 500: the container is not running, or the node is under pressure).",
            "The lease's recorded pod no longer exists and the Sandbox's pod could not be found again in time.",
        ],
        fix: "Read the API server's message at the end: for 403 apply docs/rbac/ (the probe names the missing permission); for a webhook, allow exec into the tenant namespace; for a pod that is gone, check `kubectl get sandbox,pod -n <namespace>` and acquire a new lease if the Sandbox is gone too.",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_EXEC_UNREACHABLE",
        template: "execInPod could not reach the API server (pod=${podName}, container=${containerName}); the command did not start: ${error}",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "The exec's WebSocket upgrade got no HTTP answer (connection refused or reset, TLS failure, DNS), so the command never started; `${error}` is the client's transport error, without credentials. Execute returns it at once as `stderr` of a result with `exitCode: null` and `timedOut: false` (the original reported it as a timed-out result).",
        causes: &[
            "The API server is down or restarting.",
            "The network between the worker and the API server is down, or a firewall drops it.",
        ],
        fix: "Check that the API server answers from the Paperclip host (`kubectl --kubeconfig … get --raw /readyz`), then run the command again.",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_EXEC_POD_DELETED_NOTE",
        template: "${stderr}The pod ${namespace}/${podName} was deleted while the command ran (an eviction, a node drain or a manual delete), and the command ended with it; it was not re-run. The lease's Sandbox starts a new pod, and the next execute waits for it and runs there.",
        kind: Kind::Returned,
        hooks: EXECUTE,
        meaning: "A command ended with 137 or 143 (the container runtime's KILL or TERM), or its exec connection closed, and one read of its pod right after (bounded, 3 s) found it gone (404), terminating (`deletionTimestamp`) or replaced by another pod of the same name (another `uid`). The note is appended to stderr in place of the exit code's usual note (`K8S_EXIT_137_NOTE` / `K8S_EXIT_143_NOTE`), and the result keeps the exit code the exec reported (`timedOut: false`); for a closed connection it is the whole stderr, with `exitCode: null`. The worker forgets that the lease was Ready, so the next execute waits for the Sandbox's new pod (about 2.4 s on a real node) instead of being refused by the old one.",
        causes: &[
            "The node evicted the pod (memory, disk or PID pressure) or was drained.",
            "Someone deleted the pod (`kubectl delete pod`), or a controller replaced it.",
        ],
        fix: "Run the command again (it was not re-run, and it may have done part of its work); anything the old pod held outside persistent volumes is gone. Check `kubectl get events -n <namespace>` for why the pod was deleted; for evictions, look at the node's pressure and the pod's resource requests.",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_RESUME_LEFT_COMMANDS_ENDED",
        template: "[plugin-kubernetes] Ended ${count} command(s) that an earlier plugin worker had left running in pod ${namespace}/${podName} (its process group got TERM, then KILL after 2 s).",
        kind: Kind::Warning,
        hooks: RESUME,
        meaning: "Worker log line (info): a plugin worker died (killed, crashed) while executes of it ran, and their commands ran on in the pod, since closing an exec ends nothing there. Every command an execute starts records its process group in `/tmp/paperclip-exec-<worker>-<id>.pid`; resume ends the groups recorded by any other worker than itself, in one bounded exec (at most 5 s, within resume's 25 s).",
        causes: &[
            "The host restarted the plugin worker after it crashed or was killed during an execute.",
        ],
        fix: "Nothing: the commands were ended. Run again what the dead worker's run had not finished.",
        origin: Origin::Addition(FAULTS),
        ..K8S
    },
    Entry {
        code: "K8S_RESUME_LEFT_COMMANDS_NOT_ENDED",
        template: "[plugin-kubernetes] Could not end the commands an earlier plugin worker may have left running in pod ${namespace}/${podName} (${error}); they run until they finish or the pod ends.",
        kind: Kind::Warning,
        hooks: RESUME,
        meaning: "Worker log warning: resume's exec that ends the commands other (dead) workers left in the pod failed or ran out of time (5 s at most); resume answers as usual. `${error}` is the exec's failure (or `exit N`).",
        causes: &[
            "The API server or the node did not answer the exec in time.",
            "The provider's identity may not create `pods/exec` (docs/rbac).",
            "The image's `/bin/sh` lacks `kill` or `cat`.",
        ],
        fix: "Look for leftover commands with `kubectl exec -n <namespace> <pod> -c agent -- ps` and end them, or release the lease (its pod goes with the Sandbox).",
        origin: Origin::Addition(FAULTS),
        ..K8S
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
        origin: Origin::Addition(BEYOND_ORIGINAL),
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
        origin: Origin::Addition(BEYOND_ORIGINAL),
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SOURCE_REPEATED_DIRECTORY",
        template: "Kubernetes sync source repeats a directory through symbolic links at ${path}; followSymlinks needs a tree without link loops or two links to one directory.",
        hooks: SYNC,
        meaning: "A directory sync with `followSymlinks: true` reached the same directory (same device and inode) twice while following links, so the walk stopped before copying the tree again and again. Sync-in walks the host source before its `tar -h`; nothing was uploaded. Sync-out walks the sandbox source in the pod (GNU `find -L`, which also reports loops itself) before the pod's `tar -h`; nothing was downloaded or extracted, and the path named is the sandbox's. A pod without GNU `find` skips the walk (its `tar -h` runs as in the original).",
        causes: &[
            "A link loop in the source directory, such as `a -> .` or `up -> ..`.",
            "Two links to one directory, or a link to a directory that is also in the tree.",
        ],
        fix: "Remove the link named in the message (or add it to `exclude`), or sync without `followSymlinks` so links are kept as links.",
        origin: Origin::Addition(LINK_LOOP),
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_THROUGH_SYMLINK",
        template: "Kubernetes syncOut refusing to write a tarball member through the symbolic link ${path}",
        hooks: SYNC_OUT,
        meaning: "Extracting a sync-out reached a symbolic link where a directory of a member's path should be: one already in the target on the host (left by an earlier sync), or one the archive created before. Nothing is written through a link; members extracted before it stay.",
        causes: &[
            "A link left in the target by an earlier sync-out, with a directory of the same name in the pod now.",
            "An archive forged in the pod with a link and then a member beneath it.",
        ],
        fix: "Remove the link named in the message from the target (or sync out into a fresh directory), then sync again.",
        origin: Origin::Addition(HOST_BOUND),
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_EXTENDED_HEADER_TOO_LARGE",
        template: "Kubernetes syncOut refusing tarball with an extended header of ${size} bytes (a PAX header or GNU long name), over the 1 MiB limit",
        hooks: SYNC_OUT,
        meaning: "The pod's archive carries a PAX extended header or a GNU long-name / long-link member larger than 1 MiB. Such a header is read into memory whole, so it is refused when its header block arrives, before it is read; nothing was extracted.",
        causes: &[
            "An archive forged in the pod (a replaced `tar`); real headers hold a path and a few fields.",
        ],
        fix: "Check the pod for a replaced `tar` or files with absurdly long names; sync out ordinary files.",
        origin: Origin::Addition(HOST_BOUND),
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_IMAGE_REGISTRY_INVALID",
        template: "imageRegistry must be a registry host with an optional path, such as ghcr.io/acme or https://ghcr.io/acme: ${reason}",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`imageRegistry` cannot prefix an image reference: the built-in images are moved to `<host[:port]>/<path>/<image>:<tag>`, so the value must be a registry host (with a dot, a port or `localhost`), an optional port and an optional lower-case path, written bare or after `https://` or `http://` (the scheme is left out of the references). `${reason}` says what is wrong; a user name or password is refused without being quoted.",
        causes: &[
            "`it is empty`; `it holds a space or another whitespace character`; `it holds a control or non-ASCII character`.",
            "A scheme other than https or http (`oci://`, `ftp://`, `docker://`).",
            "Credentials in the value (`https://user:token@host`): they belong in `imagePullSecrets`.",
            "A query or fragment (`?`, `#`), an empty host (`https:///acme`), a host that is not a host name, a port outside 1–65535.",
            "A single word such as `acme`: the container runtime would read it as a Docker Hub path, not a registry host.",
            "Upper-case letters or other characters in the path (`ghcr.io/Acme`), or an empty path component (`a//b`).",
        ],
        fix: "Write the registry host and optional path, e.g. `ghcr.io/acme`, `registry.example:5000/team` or `https://ghcr.io/acme`; give credentials through `imagePullSecrets`; for Docker Hub write `docker.io/<org>`. To run an image that does not follow the built-in names, name it in `runtimeImages` instead.",
        origin: Origin::Addition(IMAGE_REFERENCES),
        ..K8S
    },
    Entry {
        code: "K8S_RUNTIME_IMAGE_INVALID",
        template: "Kubernetes runtime image for adapter \"${adapterType}\" is not a valid image reference: \"${reference}\" (${reason}); set a valid reference (host/path:tag or host/path@sha256:…) for it in runtimeImages.",
        hooks: &[on(AcquireLease), on(Probe)],
        meaning: "The image a run of this adapter would use does not follow the image-reference grammar the kubelet parses with (`[host[:port]/]path[:tag][@digest]`, lower-case path components, a tag of at most 128 `[A-Za-z0-9_.-]` starting with a letter, digit or `_`, a digest sha256/sha384/sha512 with its full hex, a name of at most 255 characters). Acquire checks it before it touches the cluster and creates nothing; the pod would otherwise be stuck in `InvalidImageName`. The probe reports each such image. Credentials found in the reference are masked as `***@`.",
        causes: &[
            "A `runtimeImages` value or an `adapters[].runtimeImage` with a scheme (`https://ghcr.io/acme/agent:1`), upper-case letters, a space, or an empty tag.",
            "A digest with the wrong length or an unknown algorithm (`@sha256:abc`).",
            "A reference over 255 characters once `imageRegistry` is prefixed.",
        ],
        fix: "Give the adapter a reference such as `ghcr.io/acme/agent-runtime-claude:1.0` in `runtimeImages` (or correct its `adapters[]` entry's `runtimeImage`): no scheme, lower-case repository path, and a valid tag or digest. Check it with `docker manifest inspect <reference>` or `crane digest <reference>`.",
        origin: Origin::Addition(IMAGE_REFERENCES),
        ..K8S
    },
    // ---- the Sandbox ready-wait's named failures (issue #37) ---------------------------------
    Entry {
        code: "K8S_POD_IMAGE_PULL_FAILED",
        template: "Sandbox ${namespace}/${name} cannot start: the node cannot pull image ${image} for container ${container} (${reason}: ${message}); check the image reference, that the node can reach its registry, and imagePullSecrets.",
        hooks: READY_WAIT,
        meaning: "While waiting for the Sandbox to be Ready, its pod showed the kubelet failing to get the image: `ImagePullBackOff` (a pull failed and the kubelet holds the next one back), `ErrImagePull` entered a second time (the retry failed too; a single failed pull never fails the wait), or `InvalidImageName`. The wait fails at once instead of waiting out its deadline. `${reason}` and `${message}` are the kubelet's (the message on one line, at most 400 characters, any user and password in a URL dropped). Execute and sync reject with it, resume returns it as the reason the lease cannot resume, a login open rejects with it.",
        causes: &[
            "An image or tag that does not exist in the registry (a built-in default tag the registry does not have; a typo in `runtimeImages`).",
            "A private registry without `imagePullSecrets`, or with credentials that do not grant pulls.",
            "A registry the nodes cannot reach (no route, DNS, a proxy, an air-gapped cluster).",
        ],
        fix: "Run `kubectl -n <namespace> describe pod <name>` for the kubelet's full pull error. Correct the adapter's image in `runtimeImages` (or `imageRegistry`), push the image, add `imagePullSecrets` for a private registry, or make the registry reachable from the nodes; then acquire a new lease.",
        origin: Origin::Addition(NAMED_WAIT),
        ..K8S
    },
    Entry {
        code: "K8S_POD_CONTAINER_CREATE_FAILED",
        template: "Sandbox ${namespace}/${name} cannot start: the kubelet cannot create container ${container} from image ${image} (${reason}: ${message}).",
        hooks: READY_WAIT,
        meaning: "While waiting for the Sandbox to be Ready, its pod showed `CreateContainerConfigError` or `CreateContainerError`: the kubelet cannot set the container up. A `CreateContainerConfigError` naming the lease's own Secret (`<name>-env`) is forgiven for the first 30 s of the pod's life (acquire creates it just after the Sandbox, and the kubelet retries about 10 s later). The wait fails at once otherwise, with the kubelet's reason and message (bounded).",
        causes: &[
            "The lease's Secret (`<name>-env`) was deleted, or a Secret or ConfigMap the pod refers to does not exist.",
            "The image's configuration the runtime refuses (for example no command and no entrypoint), or a runtime class whose handler the node lacks.",
        ],
        fix: "Read the kubelet's message (`kubectl -n <namespace> describe pod <name>`): recreate what it names as missing, or correct the image or `runtimeClassName`; then acquire a new lease.",
        origin: Origin::Addition(NAMED_WAIT),
        ..K8S
    },
    Entry {
        code: "K8S_POD_CONTAINER_CRASHING",
        template: "Sandbox ${namespace}/${name} cannot start: container ${container} of image ${image} does not stay up (${reason}: ${message}); the image must provide /usr/bin/tini and /bin/sh.",
        hooks: READY_WAIT,
        meaning: "While waiting for the Sandbox to be Ready, its pod's container could not be started or keeps exiting: `RunContainerError` or `CrashLoopBackOff`. The agent container runs `/usr/bin/tini -- /bin/sh -c …` and must stay up. `${message}` starts with how the container last ended (`last exit <reason> (exit code <n>): <message>`) when the kubelet reports it, then the kubelet's own message (bounded).",
        causes: &[
            "An image without `/usr/bin/tini` or `/bin/sh` (`exec: \"/usr/bin/tini\": stat /usr/bin/tini: no such file or directory`, exit code 128).",
            "An image built for another CPU architecture (`exec format error`).",
            "A memory limit so low that the container is killed at start (`OOMKilled`, exit code 137).",
        ],
        fix: "Use an image with `/usr/bin/tini`, `/bin/sh` and the tools the provider's scripts use (docs/operators.md lists them), built for the nodes' architecture; raise `defaultResources.limits.memory` for an OOM kill; `kubectl -n <namespace> logs <pod> --previous` shows what it printed. Then acquire a new lease.",
        origin: Origin::Addition(NAMED_WAIT),
        ..K8S
    },
    Entry {
        code: "K8S_POD_UNSCHEDULABLE",
        template: "Sandbox ${namespace}/${name} cannot start: its pod has been unschedulable for more than ${graceSec}s (${message}); free or add node capacity, lower defaultResources, or raise unschedulableGraceSec.",
        hooks: READY_WAIT,
        meaning: "While waiting for the Sandbox to be Ready, its pod stayed `PodScheduled=False` with reason `Unschedulable` for longer than `unschedulableGraceSec` (default 60 s), counted from the condition's `lastTransitionTime`. `${message}` is the scheduler's (bounded). Waits shorter than the grace (resume's 20 s, a short execute `timeoutMs`) end with their own timeout unless the pod was already unschedulable for longer when they began.",
        causes: &[
            "`defaultResources.requests` larger than any node's free CPU or memory (`Insufficient cpu`).",
            "A node selector, affinity or taint no node satisfies (a `runtimeClassName` whose RuntimeClass carries a node selector, a namespace default node selector).",
            "A cluster autoscaler that adds nodes slower than the grace.",
        ],
        fix: "Read the scheduler's message: free or add node capacity, lower `defaultResources.requests`, or correct `runtimeClassName` or the node selector; raise `unschedulableGraceSec` when nodes are added on demand and take longer. Then acquire a new lease.",
        origin: Origin::Addition(NAMED_WAIT),
        ..K8S
    },
    Entry {
        code: "K8S_SANDBOX_NO_CONTROLLER",
        template: "Sandbox ${namespace}/${name} has no status 30s after it was created: no agent-sandbox controller is reconciling it; check that the agent-sandbox controller is installed and running.",
        hooks: READY_WAIT,
        meaning: "The lease's Sandbox had no `status` at all 30 s after its `creationTimestamp` (server time, so an old Sandbox of a resumed lease is judged on its first read): no controller has reconciled it, so it will never get a pod. Waits that end sooner (an execute `timeoutMs` under 30 s on a new lease) end with their own timeout instead.",
        causes: &[
            "The agent-sandbox controller is not installed, is stopped, crash-looping or cannot reach the API server.",
            "The controller watches other namespaces or another API version than the one the lease uses.",
        ],
        fix: "Check the controller (`kubectl -n agent-sandbox-system get pods`, its logs); install agent-sandbox v1.0.x (docs/operators.md) or restart it. A Sandbox created while it was down is reconciled once it runs; acquire a new lease or retry.",
        origin: Origin::Addition(NAMED_WAIT),
        ..K8S
    },
];

const NAMED_WAIT: &str = "Added by this implementation (issue #37): the original polled the Sandbox every 2 s and never read its pod, so an image that cannot be pulled, a container that cannot start, an unschedulable pod or a missing controller waited out the deadline (up to `podActivityDeadlineSec`, 3600 s) and reached the host as its own RPC timeout; the ready-wait now watches the Sandbox and its pod and names the cause within seconds.";
const IMAGE_REFERENCES: &str = "Added by this implementation (issue #37): the original accepted only an `imageRegistry` that made the image reference invalid and checked no reference, so a run waited out its deadline on a pod in `InvalidImageName`; this refuses the value or the reference at once, saying what is wrong.";
const PROBE_CHECKS: &str = "Added by this implementation (issue #37): the original's probe listed pods and reported a cluster reachable even without agent-sandbox, without the permissions a lease needs or with invalid images; the probe now checks each and says what is missing, one summary line each.";
const SUMMARY: &str = "A success text of the original (a summary or health message); the contract list holds only failures.";
const CLIENT: &str = "A message of the original's Kubernetes client library (`@kubernetes/client-node` 1.x) that the original passes through unchanged, as every error owned by a dependency; reproduced for the same cases.";
const BEYOND_ORIGINAL: &str = "Added by this implementation: where the original left a cloud resource behind without saying so, hung, or let a library's internal text reach the user, this message says what happened and what to do.";
const HOST_BOUND: &str = "Added by this implementation: the original let the pod's archive write through links already in the target and read headers of any size into memory; this refuses them, before anything lands.";
const FAULTS: &str = "Added by this implementation (issue #38): where the original, when the cluster or the worker failed under a hook, waited until a deadline, left a call unanswered or left an object or a process behind without saying so, this answers at once, says what happened and names what may be left.";
const LEASE_END: &str = "Added by this implementation (issue #38): the original's Sandboxes live until released, so a lease whose worker died mid-acquire or that the host never released stayed on the cluster, with its pod and Secret, forever; each Sandbox now ends by itself `podActivityDeadlineSec` after its last use, and this says when moving that end failed.";
const LINK_LOOP: &str = "Added by this implementation: the original followed link loops until the host ran out of memory or the path hit ELOOP; this fails at the first repeated directory, in bounded memory.";
