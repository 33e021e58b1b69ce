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
const NOT_WIRED: &[Raiser] = &[other(
    "none in this plugin version (library routine not wired into the hooks)",
)];
const REPOSITORY: &[Raiser] = &[other(
    "none in this plugin version (sandbox-repository realization, not wired into the hooks)",
)];

const SCRIPT_FIX: &str = "Look at the full `Kubernetes … failed (exit N): TOKEN` message for which transfer failed, then check the pod with `kubectl exec`: the workspace remote dir must exist, be writable and contain no symlinks leading outside it; the image needs a POSIX shell, coreutils (`realpath` or `readlink`, `mkdir`, `mv`, `chmod`, `cp`) and `tar`.";

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
        fix: "Add `runtimeImage` (e.g. `ghcr.io/acme/claude-runtime:1.2`) to that `adapters[]` entry.",
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
        fix: "Add an `adapters[]` entry (with `runtimeImage`) for the named adapter type, or remove the `adapters` key to use the built-in defaults.",
        ..K8S
    },
    Entry {
        code: "K8S_ADAPTER_UNKNOWN",
        template: "Unknown adapter type: ${adapterType}",
        hooks: ACQUIRE,
        meaning: "The run's adapter type is not one of the built-in adapters and no registry is configured.",
        causes: &[
            "A custom or newer adapter used on an environment without an `adapters` registry.",
        ],
        fix: "Declare the adapter in the environment's `adapters` registry with its `runtimeImage`, or run with a built-in adapter (claude_local, codex_local, gemini_local, cursor_local, opencode_local, pi_local).",
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
        meaning: "The Sandbox did not become Ready in time. Execute turns this into a timed-out result; resume reports it as the reason; sync and login PTY reject with it.",
        causes: &[
            "The image is large or cannot be pulled (wrong registry, missing imagePullSecrets).",
            "Not enough CPU/memory in the cluster to schedule the pod.",
            "The agent-sandbox controller is not running.",
        ],
        fix: "Run `kubectl -n <namespace> describe sandbox <name>` and `kubectl -n <namespace> get events`; fix image pulls or capacity, or raise `podActivityDeadlineSec`.",
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
        meaning: "The agent-sandbox controller reports the Sandbox as Failed; the reason and message after `failed:` come from the Sandbox status.",
        causes: &[
            "The image cannot be pulled (ErrImagePull / ImagePullBackOff).",
            "The container crashes on start (CrashLoopBackOff), e.g. a bad entrypoint.",
            "A policy or quota rejected the pod.",
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
        meaning: "Creating the run's scoped egress NetworkPolicy failed, and releasing the just-created workload also failed. The workload may still run without its policy.",
        causes: &[
            "Missing RBAC for networkpolicies (or ciliumnetworkpolicies with egressMode cilium).",
            "The Cilium CRDs are not installed while `egressMode: \"cilium\"`.",
        ],
        fix: "Grant create/delete on the policy kind, or switch `egressMode`; delete the leftover workload in the tenant namespace, then acquire again.",
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
        meaning: "A command in the pod produced no exit status within its timeout. Execute returns it as `stderr` of a timed-out result.",
        causes: &[
            "The command genuinely runs longer than the timeout.",
            "A proxy or load balancer dropped the exec WebSocket.",
            "The pod was restarted or evicted mid-command.",
        ],
        fix: "Raise the command's `timeoutMs`; check proxies in front of the API server allow long-lived WebSockets; check `kubectl describe pod` for restarts.",
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
            "A proxy dropped the exec WebSocket.",
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
            "Exit 40/41: the image lacks `realpath`/`readlink`, or the workspace dir cannot be resolved.",
            "Exit 42 `ESCAPE`: a path resolves outside the workspace through a symlink.",
            "Exit 43: tar/cp failed (disk full, missing `tar`).",
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
        meaning: "The archive from the pod lists an entry the safety check cannot parse, so it is refused unextracted.",
        causes: &[
            "File names with unusual characters (newlines) in the synced directory.",
            "A `tar` in the image with a non-GNU listing format.",
        ],
        fix: "Rename files with control characters, or use an image with GNU tar.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_SYMLINK_UNPARSEABLE",
        template: "Kubernetes syncOut refusing unparseable symlink entry: ${line}",
        hooks: SYNC_OUT,
        meaning: "A symlink in the archive has no readable target, so the archive is refused.",
        causes: &["A symlink whose name or target contains ` -> ` or control characters."],
        fix: "Remove or rename the symlink in the pod, or exclude it from the sync.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_OUT_HARDLINK_UNPARSEABLE",
        template: "Kubernetes syncOut refusing unparseable hardlink entry: ${line}",
        hooks: SYNC_OUT,
        meaning: "A hard link in the archive has no readable target, so the archive is refused.",
        causes: &["A hard link whose name contains ` link to ` or control characters."],
        fix: "Replace the hard link with a copy, or exclude it from the sync.",
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
        meaning: "A symlink or hard link in the archive points outside the synced directory.",
        causes: &[
            "Symlinks to absolute paths (e.g. `node_modules/.bin` links to `/usr/lib`) or `../` outside the tree.",
        ],
        fix: "Make the named link relative and inside the directory, delete it, or exclude it from the sync.",
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
        kind: Kind::Internal,
        hooks: NOT_WIRED,
        meaning: "The cluster does not serve the agent-sandbox API group (`agents.x-k8s.io`), which the sandbox-cr backend needs.",
        causes: &["The agent-sandbox controller and CRDs are not installed."],
        fix: "Install the kubernetes-sigs/agent-sandbox controller, or set `backend: \"job\"`.",
        ..K8S
    },
    Entry {
        code: "K8S_SANDBOX_API_VERSION_UNSUPPORTED",
        template: "API group ${SANDBOX_GROUP} serves none of [${SANDBOX_API_VERSION_PREFERENCE.join(\", \")}] (serves: ${[...served].join(\", \") || \"nothing\"}). Upgrade the agent-sandbox controller, or set backend: \"job\".",
        kind: Kind::Internal,
        hooks: NOT_WIRED,
        meaning: "The agent-sandbox API group is installed but serves neither v1beta1 nor v1alpha1.",
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
        meaning: "The plugin could not talk to the cluster: building the client failed, or listing pods in the tenant namespace failed. The underlying message is in `metadata.error`.",
        causes: &[
            "A malformed kubeconfig (the YAML parser's message is in metadata.error).",
            "The API server is unreachable from the Paperclip host, or its certificate is not trusted.",
            "The credentials are expired or lack `list pods` in the tenant namespace (401/403).",
        ],
        fix: "Check `metadata.error`; test the same kubeconfig with `kubectl --kubeconfig <file> -n <namespace> get pods` from the Paperclip host and fix connectivity or RBAC.",
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
        meaning: "Before running the command, the Sandbox did not become Ready within the command's timeout; returned as stderr of a timed-out result.",
        causes: &[
            "Image pulls, scheduling or capacity problems.",
            "The agent-sandbox controller is not running.",
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
        meaning: "Exit 40: the pod has neither `realpath` nor `readlink`, which the transfer needs to check paths safely.",
        causes: &["A minimal image (distroless, scratch) without coreutils or busybox."],
        fix: "Use a runtime image that provides coreutils or busybox (`realpath`/`readlink`).",
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
            "No `tar` in the image.",
            "Unreadable files in the directory.",
        ],
        fix: "Use an image with `tar`, and make the directory readable by the container user.",
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
        causes: &["A process in the pod was rewriting the file while it was synced out."],
        fix: "Sync out again once the file is no longer being written.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_NOT_REGULAR",
        template: "NOTREG",
        kind: Kind::Diagnostic,
        hooks: SYNC_OUT,
        meaning: "Exit 45: a file sync out points at something that is not a regular file.",
        causes: &["The source is a directory, device or FIFO, or does not exist."],
        fix: "Use `kind: \"directory\"` for directories, or point at the regular file.",
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_SCRIPT_STAGE_MKDIR_FAILED",
        template: "stage mkdir failed",
        kind: Kind::Diagnostic,
        hooks: SYNC,
        meaning: "Exit 46: creating the private staging directory in the pod failed.",
        causes: &["The workspace or `/tmp` is full or read-only."],
        fix: "Free space and make sure the workspace is writable by the container user.",
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
        meaning: "A key of `paperclipServerPodSelector` (the labels that identify the Paperclip server pods, allowed into sandboxes) is not a valid label key.",
        causes: &["Spaces, upper-case prefixes, a leading `-`, or `:` in the key."],
        fix: "Use valid label keys such as `app` or `app.kubernetes.io/name`, matching the Paperclip server pods' labels.",
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
        meaning: "`paperclipServerPodSelector` is `{}`; an empty selector would match every pod.",
        causes: &["The selector was cleared instead of removed."],
        fix: "Remove the key to use the default `{\"app\": \"paperclip-server\"}`, or set the Paperclip server pods' labels.",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_ADAPTER_TYPE_UNKNOWN",
        template: "adapterType must be one of the known adapter types",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "The config's default `adapterType` is not a built-in adapter. Registry adapters cannot be the environment default.",
        causes: &["A typo, or a custom adapter from the `adapters` registry used as default."],
        fix: "Set `adapterType` to claude_local, codex_local, gemini_local, cursor_local, opencode_local or pi_local (or remove it).",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_PATTERN_MISMATCH",
        template: "Invalid",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "A string field does not match its pattern: `namespacePrefix` and `companySlug` must match `^[a-z0-9-]{1,32}$`.",
        causes: &["Upper-case letters, underscores, dots or more than 32 characters."],
        fix: "Use lower-case letters, digits and `-` only, at most 32 characters (e.g. `paperclip-`, `acme`).",
        ..K8S
    },
    Entry {
        code: "K8S_CONFIG_URL_INVALID",
        template: "Invalid url",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`imageRegistry` is not a URL.",
        causes: &["A registry without scheme, e.g. `ghcr.io/acme`."],
        fix: "Write `imageRegistry` with a scheme, e.g. `https://ghcr.io/acme`.",
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
        meaning: "The environment config as a whole (or a nested map like `defaultResources`) is not an object.",
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
        fix: "Set `backend` to `sandbox-cr` (default; needs the agent-sandbox controller) or `job`.",
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
        meaning: "A boolean field (`inCluster`, `reuseLease`, or `adapters[].enabled`) is written as a string.",
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
        fix: "Check `kubectl describe pod` for `OOMKilled`; raise `defaultResources.limits.memory` or make the command use less memory.",
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
        meaning: "The probe's summary when the API server answered its pod list (a missing tenant namespace counts as reachable): the credentials work. It names the tenant namespace leases will use.",
        causes: &["A reachable cluster and working credentials."],
        fix: "Nothing to fix; acquire a lease to check the Sandbox API and the tenant provisioning too.",
        origin: Origin::Addition(SUMMARY),
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
        hooks: CONFIG,
        meaning: "The API server answered with an error whose body is not a Kubernetes Status; the text is `@kubernetes/client-node`'s ApiException, which the original passes through (with `code` = the HTTP status).",
        causes: &[
            "A proxy or load balancer in front of the API server answering itself (502, 503, 504).",
            "An API server overloaded or restarting.",
        ],
        fix: "Check the API server (and anything in front of it) is healthy and reachable from the Paperclip server, then retry.",
        origin: Origin::Addition(CLIENT),
        ..K8S
    },
    Entry {
        code: "K8S_API_REQUIRED_PARAMETER",
        template: "Required parameter ${key} was null or undefined",
        hooks: CONFIG,
        meaning: "An API request was about to be made without a name or namespace it needs; the text is `@kubernetes/client-node`'s own check, as the original raises it.",
        causes: &["Lease metadata whose namespace or names were removed or set to null."],
        fix: "Use the lease as the provider returned it, or acquire a new one.",
        origin: Origin::Addition(CLIENT),
        ..K8S
    },
    Entry {
        code: "K8S_API_UNKNOWN_STATUS",
        template: "Unknown API Status Code!",
        hooks: CONFIG,
        meaning: "The API server answered with an HTTP status `@kubernetes/client-node` has no mapping for; the original passes the client's text through.",
        causes: &["Something other than a Kubernetes API server at the kubeconfig's server URL."],
        fix: "Check the kubeconfig's `server` URL points at the cluster's API server.",
        origin: Origin::Addition(CLIENT),
        ..K8S
    },
    Entry {
        code: "K8S_SYNC_TAR_FAILED",
        template: "Command failed: tar ${args}\n${stderr}",
        hooks: SYNC,
        meaning: "The host's `tar` failed while packing or unpacking a sync archive; the text is Node's `execFile` error as the original surfaces it, with tar's stderr.",
        causes: &[
            "A source path that cannot be read on the host.",
            "No `tar` on the host's PATH.",
        ],
        fix: "Read tar's message after the command line; fix the host path or install tar.",
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
        meaning: "A Kubernetes API request of the hook got no reply before the hook's bound: the call's `timeoutMs` (`config.timeoutMs`) kept within a floor and a cap per hook so the reply reaches the host before its own deadline (acquire at least 10 s, 25 s without a timeout; resume at least 35 s; release and destroy 10–25 s; probe 10–100 s). An acquire cut this way still deletes what it had created (else it fails with `K8S_ACQUIRE_CLEANUP_INCOMPLETE`); a probe reports it in `metadata.error`; a resume reports it as the `reason` of a lease it cannot resume; a destroy rejects with `Failed to delete one or more Kubernetes lease resources`, this message among its `errors`. Execute, sync and a login open bound the lookups before their stream (the Sandbox API discovery and the pod lookup): execute by what is left of its `timeoutMs` (at least 5 s, the original's exec floor), sync by `config.timeoutMs` (at least 10 s, 25 s without one), a login open by what is left of its 30 s readiness wait (at least 5 s), which also bounds the upgrade of its terminal's exec. Their readiness waits end on their own timeout instead, with the contract's readiness message, and an exec's upgrade is under the exec's watchdog.",
        causes: &[
            "An API server (or a proxy or load balancer in front of it) that accepts connections and never answers: overloaded, stuck etcd, a half-open connection.",
            "A webhook on the request path that hangs.",
        ],
        fix: "Check the API server's health (`kubectl get --raw /readyz`) and anything between the worker and it, then retry; raise the environment's `timeoutMs` if the cluster is only slow.",
        origin: Origin::Addition(BEYOND_ORIGINAL),
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
];

const SUMMARY: &str = "A success text of the original (a summary or health message); the contract list holds only failures.";
const CLIENT: &str = "A message of the original's Kubernetes client library (`@kubernetes/client-node` 1.x) that the original passes through unchanged, as every error owned by a dependency; reproduced for the same cases.";
const BEYOND_ORIGINAL: &str = "Added by this implementation: where the original left a cloud resource behind without saying so, hung, or let a library's internal text reach the user, this message says what happened and what to do.";
const HOST_BOUND: &str = "Added by this implementation: the original let the pod's archive write through links already in the target and read headers of any size into memory; this refuses them, before anything lands.";
const LINK_LOOP: &str = "Added by this implementation: the original followed link loops until the host ran out of memory or the path hit ELOOP; this fails at the first repeated directory, in bounded memory.";
