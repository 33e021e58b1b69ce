//! The CreateOS provider's messages, in the order of `tests/data/contract/createos-errors.txt`.

use sandbox_core::Hook::*;

use crate::{BLANK, Entry, Kind, Origin, Provider, Raiser, noted, on, other};

const CREATEOS: Entry = Entry {
    provider: Provider::CreateOs,
    ..BLANK
};

/// Hooks that parse the environment config (validate returns the message in `errors[]`, the
/// probe in its `summary`, every other hook rejects with it).
const CONFIG: &[Raiser] = &[
    on(ValidateConfig),
    on(Probe),
    on(AcquireLease),
    on(ResumeLease),
    on(ReleaseLease),
    on(DestroyLease),
    on(RealizeWorkspace),
    on(Execute),
    on(SyncIn),
    on(SyncOut),
    on(StartInteractiveSetup),
    on(GetInteractiveSetup),
    on(CaptureTemplate),
    on(CancelInteractiveSetup),
    on(DeleteTemplate),
];

/// Hooks that build an API client (and so resolve the API key).
const CLIENT: &[Raiser] = &[
    on(Probe),
    on(AcquireLease),
    on(ResumeLease),
    on(ReleaseLease),
    on(DestroyLease),
    on(Execute),
    on(SyncIn),
    on(SyncOut),
    on(StartInteractiveSetup),
    on(GetInteractiveSetup),
    on(CaptureTemplate),
    on(CancelInteractiveSetup),
    on(DeleteTemplate),
];

/// Hooks that send API requests.
const API: &[Raiser] = &[
    on(Probe),
    on(AcquireLease),
    on(ResumeLease),
    on(ReleaseLease),
    on(DestroyLease),
    on(Execute),
    on(SyncIn),
    on(SyncOut),
    on(StartInteractiveSetup),
    on(GetInteractiveSetup),
    on(CaptureTemplate),
    on(CancelInteractiveSetup),
    on(DeleteTemplate),
    on(LoginPtyOpen),
    on(DuplexChannelOpen),
];

/// Hooks that create or fork a sandbox and bring it to `running`.
const SANDBOX: &[Raiser] = &[
    on(Probe),
    on(AcquireLease),
    on(ResumeLease),
    on(StartInteractiveSetup),
    on(GetInteractiveSetup),
    on(CaptureTemplate),
];

/// Hooks that run a command through the streaming exec endpoint.
const STREAM: &[Raiser] = &[on(Probe), on(Execute), on(SyncIn), on(SyncOut)];

/// Hooks that open a managed process (login PTY and duplex sessions).
const PROCESS: &[Raiser] = &[on(LoginPtyOpen), on(DuplexChannelOpen)];

/// The output follower of an open session: its failures end the session rather than reject
/// the hook.
const FOLLOW: &[Raiser] = &[
    noted(LoginPtyOpen, "(session output, after the hook returned)"),
    noted(
        DuplexChannelOpen,
        "(session output, after the hook returned)",
    ),
];

/// Hooks that run both kinds of command stream.
const ANY_STREAM: &[Raiser] = &[
    on(Probe),
    on(Execute),
    on(SyncIn),
    on(SyncOut),
    on(LoginPtyOpen),
    on(DuplexChannelOpen),
];

const SYNC: &[Raiser] = &[on(SyncIn), on(SyncOut)];
const SYNC_IN: &[Raiser] = &[on(SyncIn)];
const SYNC_OUT: &[Raiser] = &[on(SyncOut)];
const TRACKED: &[Raiser] = &[on(Execute), on(SyncIn), on(SyncOut)];
const ACQUIRE: &[Raiser] = &[on(Probe), on(AcquireLease)];
const RELEASE: &[Raiser] = &[on(ReleaseLease), on(DestroyLease)];
const SESSIONS: &[Raiser] = &[
    on(LoginPtyStop),
    on(LoginPtyClose),
    on(DuplexChannelStop),
    on(DuplexChannelClose),
    on(ReleaseLease),
];

const PROTOCOL_FIX: &str = "This is a provider-side protocol problem, not a configuration error: retry the call; if it repeats, check https://status.createos.sh or the status of your custom endpoint, and report it to CreateOS with the time and sandbox ID. Destroy the lease if the command may still be running.";

pub(crate) const ENTRIES: &[Entry] = &[
    Entry {
        code: "CREATEOS_CONFIG_TEXT_INVALID",
        template: "${key} must be a non-empty string.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "A text setting of the environment config (apiUrl, shape, apiKey, snapshot, rootfs or region; named at the start of the message) is present but is not usable text.",
        causes: &[
            "The value is a number, boolean, object or array instead of a string (e.g. `shape: 2`).",
            "The value is empty or only whitespace.",
            "The value contains a NUL character (often from a pasted secret).",
        ],
        fix: "Set the named key to a non-empty string, or remove it entirely to use the default (apiUrl and shape have no default and are required).",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_API_URL_MISSING",
        template: "CreateOS requires an API URL.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "The environment config has no `apiUrl`.",
        causes: &["`apiUrl` was left out or set to null in the environment config."],
        fix: "Add `apiUrl` to the environment config, e.g. `\"apiUrl\": \"https://api.sb.createos.sh\"` for the hosted service.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_API_URL_INVALID",
        template: "CreateOS API URL is invalid.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`apiUrl` cannot be parsed as a URL at all.",
        causes: &[
            "The scheme is missing (`api.sb.createos.sh` instead of `https://api.sb.createos.sh`).",
            "A typo, stray space or unescaped character in the host.",
        ],
        fix: "Write `apiUrl` as a full origin including the scheme, e.g. `https://api.sb.createos.sh`.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_API_URL_NOT_HTTPS_ORIGIN",
        template: "CreateOS API URL must be an HTTPS origin (optionally ending in /v1); HTTP is allowed on loopback only.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`apiUrl` parses, but it is not an HTTPS origin: the plugin only talks to `https://host[:port]` (optionally with a `/v1` path), or to plain HTTP on localhost.",
        causes: &[
            "`http://` used for a non-loopback host.",
            "A path other than `/` or `/v1` (e.g. `/api/v1` or `/v1/sandboxes`).",
            "Credentials, a query string or a fragment in the URL.",
        ],
        fix: "Reduce `apiUrl` to the origin (`https://api.sb.createos.sh` or `https://your-host:8443`); use `http://` only for `localhost`, `127.0.0.1` or `[::1]`, and pass the key in `apiKey` rather than in the URL.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SHAPE_MISSING",
        template: "CreateOS requires a shape from its shape catalog.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "The environment config has no `shape` (the sandbox size).",
        causes: &["`shape` was left out or set to null."],
        fix: "Set `shape` to a shape from the CreateOS shape catalog, e.g. `s-1vcpu-2gb` (the manifest lists s-1vcpu-256mb … s-8vcpu-16gb).",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_TIMEOUT_INVALID",
        template: "timeoutMs must be an integer between 1 and 86400000.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`timeoutMs` (the per-call deadline, default 300000) is not a whole number of milliseconds between 1 and 24 hours.",
        causes: &[
            "The value is a string (`\"300000\"`) or a fraction.",
            "Zero, negative, or more than 86400000.",
        ],
        fix: "Set `timeoutMs` to an integer such as `300000`, or remove it to use the 5-minute default.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_REUSE_LEASE_INVALID",
        template: "reuseLease must be a boolean.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`reuseLease` is set to something other than true or false.",
        causes: &["A string such as `\"true\"` or a number was used."],
        fix: "Set `reuseLease` to `true` or `false` (JSON booleans, unquoted), or remove it.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_AUTO_PAUSE_INVALID",
        template: "autoPauseAfterSeconds must be an integer between 60 and 86400.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`autoPauseAfterSeconds` (how long an idle kept-warm sandbox runs before CreateOS pauses it, default 600) is out of range.",
        causes: &["A value below 60 or above 86400, a fraction, or a string."],
        fix: "Set `autoPauseAfterSeconds` to an integer from 60 to 86400, or remove it to use 600.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ROOTFS_BY_ADAPTER_NOT_OBJECT",
        template: "rootfsByAdapter must be an object of adapter names to root filesystems.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`rootfsByAdapter` is not a map from adapter type to root filesystem.",
        causes: &["An array or a string was given instead of an object."],
        fix: "Write it as an object, e.g. `{\"claude_local\": \"ubuntu-24.04-node\"}`, or remove it.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ROOTFS_BY_ADAPTER_ENTRY_INVALID",
        template: "rootfsByAdapter must contain non-empty adapter and root filesystem strings.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "One entry of `rootfsByAdapter` has an empty adapter name or a root filesystem that is not a non-empty single-line string.",
        causes: &[
            "An empty key or an empty/whitespace value.",
            "A value that is not a string (number, null, object).",
            "A key or value containing a line break or NUL.",
        ],
        fix: "Make every key an adapter type and every value a root filesystem name from the CreateOS rootfs catalog; delete incomplete entries.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_EGRESS_ALLOWLIST_INVALID",
        template: "egressAllowlist must be an array of non-empty host or CIDR strings.",
        kind: Kind::Validation,
        hooks: CONFIG,
        meaning: "`egressAllowlist` (hosts and CIDRs the sandbox may reach) is not a list of non-empty strings.",
        causes: &[
            "A single string instead of an array.",
            "An empty, non-string or multi-line entry.",
        ],
        fix: "Write it as an array such as `[\"registry.npmjs.org\", \"10.0.0.0/8\"]`, or remove it to allow no extra egress.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_NETWORK_EGRESS_LIST_INVALID",
        template: "networkEgress allowlists must contain non-empty strings.",
        kind: Kind::Validation,
        hooks: ACQUIRE,
        meaning: "The run's execution-workspace settings request extra egress (`networkEgress.allowFqdns` / `allowCidrs`), but a list is malformed.",
        causes: &[
            "`allowFqdns` or `allowCidrs` is not an array.",
            "An entry is empty, not a string, or contains a line break.",
        ],
        fix: "Correct `executionWorkspaceSettings.networkEgress` of the workspace (in Paperclip's workspace settings) so both lists hold non-empty host or CIDR strings, then start the run again.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_NETWORK_EGRESS_NOT_OBJECT",
        template: "networkEgress must be an object.",
        kind: Kind::Validation,
        hooks: ACQUIRE,
        meaning: "The run's `executionWorkspaceSettings.networkEgress` is not an object.",
        causes: &["It was set to a string, array or number by the workspace settings."],
        fix: "Set `networkEgress` in the workspace settings to an object like `{\"allowFqdns\": [\"api.example.com\"]}`, or remove it.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_CUSTOM_ENDPOINT_NEEDS_API_KEY",
        template: "Custom CreateOS API endpoints require an explicit environment API key; the host fallback is only available for https://api.sb.createos.sh.",
        hooks: CLIENT,
        meaning: "The environment points at a CreateOS endpoint other than the hosted one and has no `apiKey`. The host's `CREATEOS_API_KEY` is only sent to the official endpoint, so that a custom URL cannot collect it.",
        causes: &[
            "A self-hosted or staging `apiUrl` without `apiKey` in the environment config.",
            "Note: validation does not resolve keys, so such a config validates and only fails here.",
        ],
        fix: "Add `apiKey` (the key for that endpoint) to the environment config, or switch `apiUrl` to `https://api.sb.createos.sh` to use the host's CREATEOS_API_KEY.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_API_KEY_MISSING",
        template: "CreateOS requires an API key in the environment config or CREATEOS_API_KEY.",
        hooks: CLIENT,
        meaning: "No usable API key was found: neither `apiKey` in the environment config nor the CREATEOS_API_KEY variable of the Paperclip host.",
        causes: &[
            "CREATEOS_API_KEY is not set (or is empty) in the environment the Paperclip server runs in.",
            "The key contains a line break or NUL (often a trailing newline from a secrets file).",
        ],
        fix: "Set `apiKey` in the environment config, or export CREATEOS_API_KEY for the Paperclip server process and restart it; strip trailing newlines from the key.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_HTTP_ERROR",
        template: "CreateOS request failed (HTTP ${status}) during ${label}.",
        hooks: API,
        meaning: "The CreateOS API answered with a non-success HTTP status. The label names the kind of request (sandbox lifecycle, workspace command, file transfer, process creation, process cleanup, output connection, stdin close). The provider's response body is never included.",
        causes: &[
            "401/403: the API key is wrong, revoked or lacks access to this account.",
            "404: the sandbox or template no longer exists (deleted, expired or from another account).",
            "Other 4xx during sandbox lifecycle: the account does not accept the shape, rootfs, snapshot or region (unknown name or exhausted quota).",
            "429: rate limited; 5xx: a CreateOS outage.",
        ],
        fix: "Check the status: fix the API key for 401/403, the shape/rootfs/snapshot names for 4xx during sandbox lifecycle, re-acquire a lease for 404, and retry later for 429/5xx.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_INVALID_RESPONSE",
        template: "CreateOS returned an invalid response.",
        hooks: API,
        meaning: "A JSON response did not carry the expected object (`data`, `result` or `output`).",
        causes: &[
            "`apiUrl` points at something that is not the CreateOS API (a proxy, a different service).",
            "An incompatible CreateOS API version.",
        ],
        fix: "Check that `apiUrl` is the CreateOS API origin; if it is, retry and report the request to CreateOS.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_INVALID_RESOURCE_ID",
        template: "CreateOS returned an invalid resource ID.",
        hooks: API,
        meaning: "A sandbox, process or template ID is not 1-200 characters of letters, digits, `_` or `-`. This check also applies to IDs passed in by the caller (lease IDs, template refs).",
        causes: &[
            "The lease's providerLeaseId or a templateRef was edited or corrupted in Paperclip's database.",
            "A template ref copied with extra characters (quotes, spaces, URL).",
            "The API returned a malformed ID.",
        ],
        fix: "Use the exact ID Paperclip stored for the lease or template; for a corrupted lease, destroy it from Paperclip and acquire a new one.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_CONNECTION_FAILED",
        template: "CreateOS connection failed.",
        hooks: API,
        meaning: "The HTTP request never got a response: DNS, TCP or TLS failed, or the endpoint answered with a redirect (redirects are refused). The cause is dropped on purpose because it may contain the URL.",
        causes: &[
            "No network route from the Paperclip host to `apiUrl` (firewall, proxy, DNS).",
            "A wrong host or port in `apiUrl`.",
            "The endpoint redirects (e.g. http→https or to a login page).",
        ],
        fix: "From the Paperclip host, run `curl -sS -o /dev/null -w '%{http_code}\\n' <apiUrl>/v1/rootfs`: any status (even 401) proves connectivity, a 3xx means a redirect (use the final URL as `apiUrl`), and a curl error points at DNS, firewall or proxy settings to fix.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_INVALID_JSON",
        template: "CreateOS returned invalid JSON.",
        hooks: API,
        meaning: "A response body could not be read or was not a JSON object.",
        causes: &[
            "`apiUrl` points at a web page or proxy that returns HTML.",
            "The connection dropped or the call timed out while the body was being read.",
        ],
        fix: "Check `apiUrl` is the API origin; retry, and raise `timeoutMs` if calls time out on slow links.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_UNSUCCESSFUL_RESPONSE",
        template: "CreateOS returned an unsuccessful response.",
        hooks: API,
        meaning: "The API answered 2xx but its envelope's `status` was not `success`.",
        causes: &["A CreateOS-side failure reported inside a 200 response."],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SANDBOX_IDENTITY_INVALID",
        template: "CreateOS sandbox identity or state is invalid.",
        hooks: SANDBOX,
        meaning: "Reading a sandbox returned a different ID than requested, or no status.",
        causes: &[
            "A proxy or cache in front of the API served the wrong object.",
            "A CreateOS API defect.",
        ],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ROOTFS_DEFAULT_INVALID",
        template: "CreateOS rootfs catalog did not provide a valid default.",
        hooks: &[on(Probe), on(AcquireLease), on(StartInteractiveSetup)],
        meaning: "No root filesystem was configured, so the plugin asked CreateOS for its default, and the catalog did not name one.",
        causes: &["The account or endpoint has no default rootfs."],
        fix: "Set `rootfs` (or `rootfsByAdapter` for this adapter, or `snapshot`) in the environment config to a root filesystem from the CreateOS catalog.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_TEMPLATE_NOT_PAUSED",
        template: "CreateOS template sandbox must be paused before it can be forked.",
        hooks: &[on(Probe), on(AcquireLease), on(StartInteractiveSetup)],
        meaning: "The `snapshot` (or source template) sandbox is not paused; CreateOS can only fork a paused sandbox.",
        causes: &[
            "The template sandbox was resumed by hand (e.g. to inspect it) and left running.",
            "`snapshot` names an ordinary sandbox rather than a captured template.",
        ],
        fix: "Pause the template sandbox (CreateOS dashboard, or `POST /v1/sandboxes/<id>/pause` on the API) or capture a new template through Paperclip, then acquire again.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_FORK_CLEANUP_UNCONFIRMED",
        template: "CreateOS fork setup failed and cleanup is unconfirmed for sandbox ${id}.",
        hooks: &[on(Probe), on(AcquireLease), on(StartInteractiveSetup)],
        meaning: "A sandbox was forked from the template but could not be started or configured, and deleting it also failed. The named sandbox may still exist and bill.",
        causes: &[
            "A CreateOS outage or network failure during fork setup.",
            "The call deadline (`timeoutMs`) ran out.",
        ],
        fix: "Delete the named sandbox in the CreateOS dashboard (or `DELETE /v1/sandboxes/<id>` on the API) so it stops billing, then acquire again.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SANDBOX_STATE_UNEXPECTED",
        template: "CreateOS sandbox did not reach ${desired}; provider state is ${status}.",
        hooks: SANDBOX,
        meaning: "While starting or pausing a sandbox, it entered a state from which the requested state cannot be reached (e.g. `failed`, `destroyed`).",
        causes: &[
            "The sandbox was deleted or failed on the CreateOS side.",
            "The rootfs or snapshot is broken and the sandbox cannot boot.",
        ],
        fix: "For a lease, let Paperclip acquire a fresh one (or destroy this lease); if new sandboxes also fail, check the rootfs/snapshot and CreateOS status.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_NUL",
        template: "Sandbox command values cannot contain NUL.",
        hooks: &[on(Execute), on(SyncIn), on(SyncOut), on(LoginPtyOpen)],
        meaning: "A command, argument, environment value, working directory or path contains a NUL character, which a shell cannot carry.",
        causes: &[
            "Binary data or a C-string terminator passed as a command argument or env value.",
        ],
        fix: "Remove NUL characters from the command; pass binary data through stdin or file sync instead.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_REQUIRED",
        template: "A sandbox command is required.",
        hooks: &[on(Execute)],
        meaning: "An execute call arrived with an empty command.",
        causes: &["The caller passed `command: \"\"` or no command."],
        fix: "Pass the program to run in `command` (and its arguments in `args`).",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ENV_VAR_INVALID",
        template: "Invalid sandbox environment variable.",
        hooks: &[on(Execute)],
        meaning: "An environment variable for the command has an invalid name or a non-string value.",
        causes: &[
            "A name with `-`, `.`, spaces, or a leading digit.",
            "A number, boolean or null value.",
        ],
        fix: "Use names matching `[A-Za-z_][A-Za-z0-9_]*` and string values (convert numbers with String()).",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_EMPTY_PROCESS_STREAM",
        template: "CreateOS returned an empty process stream.",
        hooks: ANY_STREAM,
        meaning: "A streaming command response had no body.",
        causes: &[
            "A proxy that buffers or strips streaming responses.",
            "A CreateOS API defect.",
        ],
        fix: "Bypass proxies that do not support streamed (NDJSON) responses, then retry.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_FRAME_TOO_LARGE",
        template: "CreateOS process frame is too large.",
        hooks: ANY_STREAM,
        meaning: "A single line of the command's output stream exceeded 1 MiB, the safety limit per frame.",
        causes: &[
            "A corrupt stream or a proxy that joined lines.",
            "A CreateOS API defect.",
        ],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_FRAME_INVALID",
        template: "CreateOS returned an invalid process frame.",
        hooks: ANY_STREAM,
        meaning: "A line of the command's output stream was not a JSON object.",
        causes: &[
            "A proxy injecting text into the stream.",
            "A CreateOS API defect.",
        ],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_JOURNAL_INVALID",
        template: "CreateOS process output journal is invalid.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "While recovering a dropped process stream, the process's wait endpoint reported an output position behind what was already received.",
        causes: &["A CreateOS API defect or a restarted sandbox agent."],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_EXIT_STATUS_MISSING",
        template: "CreateOS process exit status is missing.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "A process ended but CreateOS reported neither an exit code nor a signal.",
        causes: &["A CreateOS API defect."],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_OUTPUT_EVICTED",
        template: "CreateOS process output was evicted before it could be read.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "CreateOS discarded part of the process's output journal before the plugin could read it (HTTP 410 or `output_offset_expired`).",
        causes: &[
            "The process produced output faster than it was read, or the connection was down for long.",
        ],
        fix: "Rerun the session; reduce the process's output volume (or redirect it to a file) if it repeats.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_OUTPUT_CONNECTION_FAILED",
        template: "CreateOS process output connection failed.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "Connecting to a process's output stream failed more than three times in a row (5xx, 429 or network errors).",
        causes: &[
            "A CreateOS outage or rate limiting.",
            "Unstable network between Paperclip and CreateOS.",
        ],
        fix: "Retry later; check CreateOS status and the host's network.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_SEQUENCE_INVALID",
        template: "CreateOS process sequence is invalid.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "An output frame carried an invalid sequence number.",
        causes: &["A CreateOS API defect."],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_SEQUENCE_GAP",
        template: "CreateOS process output has a sequence gap.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "Output frames skipped a sequence number, so some output was lost.",
        causes: &["A CreateOS API defect or a proxy dropping data."],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_OUTPUT_INVALID",
        template: "CreateOS process output is invalid.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "An output frame named an unknown stream or carried malformed base64 data.",
        causes: &["A CreateOS API defect."],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_STREAM_ERROR",
        template: "CreateOS process stream reported an error.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "CreateOS sent an error frame on a process's output stream.",
        causes: &[
            "The sandbox was paused, deleted or restarted while the session ran.",
            "A CreateOS-side failure.",
        ],
        fix: "Reopen the session; if the sandbox is gone, acquire a fresh lease first.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_EVENT_UNKNOWN",
        template: "CreateOS returned an unknown process event.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "An output frame had a type the plugin does not know.",
        causes: &["A newer, incompatible CreateOS API."],
        fix: "Update the plugin; if you run the latest version, report it to CreateOS.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_REPLAY_INCOMPLETE",
        template: "CreateOS process stream ended before all output could be replayed.",
        kind: Kind::Session,
        hooks: FOLLOW,
        meaning: "The output stream kept ending without an exit event, and after recovery the plugin still could not read all output up to the process's end.",
        causes: &[
            "Repeated connection drops between Paperclip and CreateOS.",
            "A CreateOS API defect.",
        ],
        fix: "Retry; if it repeats, check the network path (proxies closing long-lived responses) and CreateOS status.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_STREAM_ERROR",
        template: "CreateOS command stream reported an error.",
        hooks: STREAM,
        meaning: "CreateOS sent an error frame while running the command.",
        causes: &[
            "The sandbox was paused or deleted while the command ran.",
            "The command could not be started by the sandbox agent.",
        ],
        fix: "Run the command again; if the sandbox is gone, release the lease and acquire a fresh one.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_STREAM_EVENT_INVALID",
        template: "CreateOS returned an invalid command stream event.",
        hooks: STREAM,
        meaning: "A frame of the command's output stream matched none of the known kinds.",
        causes: &["A newer, incompatible CreateOS API or a defect."],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_STREAM_NO_EXIT",
        template: "CreateOS command stream ended without an exit status.",
        hooks: STREAM,
        meaning: "The command's output stream closed before reporting an exit code; the command's outcome is unknown.",
        causes: &[
            "A proxy or load balancer closed the long-running response.",
            "The sandbox was paused, restarted or deleted mid-command.",
        ],
        fix: "Rerun the command; for long commands, make sure no proxy between Paperclip and CreateOS cuts idle or long responses.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_CANCELLED",
        template: "CreateOS command was cancelled.",
        hooks: TRACKED,
        meaning: "The command was aborted before it finished (not because of its timeout).",
        causes: &[
            "The lease was released or destroyed while the command ran.",
            "The run was cancelled or the worker shut down.",
        ],
        fix: "Nothing to fix if the cancel was intended; otherwise keep the lease until its commands finish.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PIPE_PROCESS_PTY_OUTPUT",
        template: "CreateOS pipe process returned PTY output.",
        kind: Kind::Internal,
        hooks: &[other(
            "execute (managed-process command; not used by the hooks in this version)",
        )],
        meaning: "A process started without a terminal sent terminal (PTY) output.",
        causes: &["A CreateOS API defect."],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_ENDED_BEFORE_CONNECT",
        template: "CreateOS process ended before its output stream connected.",
        kind: Kind::Internal,
        hooks: &[other(
            "execute (managed-process command; not used by the hooks in this version)",
        )],
        meaning: "A managed command finished before the plugin attached to its output.",
        causes: &[
            "A CreateOS API defect (the command is gated and cannot start before the connection).",
        ],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_CREATION_UNCONFIRMED",
        template: "CreateOS process creation could not be confirmed; destroy the lease before reusing it.",
        kind: Kind::Internal,
        hooks: &[other(
            "execute (managed-process command; not used by the hooks in this version)",
        )],
        meaning: "The request to start a process failed in a way that leaves open whether the process runs.",
        causes: &["A timeout, network failure or 5xx while creating the process."],
        fix: "Destroy the lease (not just release it) so no stray process survives, then acquire a fresh one.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_TREE_NOT_EXITED",
        template: "Process tree has not exited.",
        kind: Kind::Internal,
        hooks: &[other(
            "execute (internal; reported as CREATEOS_COMMAND_CLEANUP_FAILED)",
        )],
        meaning: "Internal: killing a process did not confirm that its process tree exited. It is never shown on its own; it becomes `CreateOS command cleanup failed; process termination is unconfirmed.`",
        causes: &["A process that ignores SIGTERM/SIGKILL or a CreateOS API defect."],
        fix: "Destroy the lease so the sandbox and every process in it are removed.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_CLEANUP_FAILED",
        template: "CreateOS command cleanup failed; process termination is unconfirmed.",
        kind: Kind::Internal,
        hooks: &[other(
            "execute (managed-process command; not used by the hooks in this version)",
        )],
        meaning: "After a command ended early, the plugin could not confirm that its processes were killed.",
        causes: &["The kill request failed (network, 5xx) or the process tree survived it."],
        fix: "Destroy the lease before reusing it, so no stray process keeps running.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_TREE_TERMINATION_UNCONFIRMED",
        template: "CreateOS process tree termination was not confirmed.",
        hooks: SESSIONS,
        meaning: "Stopping a login PTY or duplex session did not confirm that its processes exited. On release, the lease is then marked as requiring cleanup.",
        causes: &[
            "A process that survives SIGTERM and the grace period.",
            "A CreateOS API defect.",
        ],
        fix: "Destroy the lease (onEnvironmentDestroyLease) so the sandbox and its processes are removed; acquire a fresh lease afterwards.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_MANAGED_PROCESS_STOPPED",
        template: "CreateOS managed process was stopped.",
        kind: Kind::Internal,
        hooks: &[
            on(LoginPtyStop),
            noted(DuplexChannelStop, "(internal abort reason)"),
        ],
        meaning: "Internal: the reason a session's output follower is aborted after a stop. The host sees the session exit with code null, not this text.",
        causes: &["The session was stopped or closed on purpose."],
        fix: "Nothing to fix: this records an intended stop.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_TRANSFER_PATH_NOT_CONFINED",
        template: "CreateOS transfer requires a confined absolute sandbox path.",
        hooks: SYNC,
        meaning: "A sandbox-side path of a file sync (or a post-upload command's cwd) is not absolute, contains `..`, or contains NUL. Checked before anything is transferred.",
        causes: &[
            "A relative path such as `src/app` instead of `/paperclip-workspace/src/app`.",
            "A path with `..` segments.",
        ],
        fix: "Use absolute paths under `/paperclip-workspace` without `..` segments.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_TRANSFER_PATH_ESCAPES_WORKSPACE",
        template: "CreateOS transfer path escapes the workspace.",
        hooks: SYNC,
        meaning: "A sandbox-side sync path is absolute but outside `/paperclip-workspace`.",
        causes: &["A target such as `/tmp/x` or `/home/user` instead of a path in the workspace."],
        fix: "Sync into or out of `/paperclip-workspace` (or a path below it) only.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ARCHIVE_UNSAFE",
        template: "CreateOS archive contains unsafe entries or exceeds the extraction limit.",
        hooks: SYNC_OUT,
        meaning: "A directory downloaded from the sandbox contains entries that could write outside the target (absolute paths, `..`, links pointing outside, special files) or is larger than 10 GiB. Nothing was extracted.",
        causes: &[
            "Symlinks in the sandbox directory that point outside it (e.g. to `/etc`).",
            "Device files, FIFOs or sockets in the directory.",
            "More than 10 GiB of data.",
        ],
        fix: "Remove or exclude (`exclude` patterns) the offending links and special files in the sandbox, or sync a smaller subdirectory.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_TRANSFER_COMMAND_FAILED",
        template: "CreateOS transfer command failed.",
        hooks: SYNC,
        meaning: "A sandbox-side step of a file sync (copy, move, tar, chmod, the path guard) or a post-upload command exited non-zero or timed out.",
        causes: &[
            "The sandbox path does not exist (sync out) or is of the wrong kind (file vs directory).",
            "The path resolves outside the workspace through a symlink.",
            "A post-upload command failed or exceeded its `timeoutMs`.",
            "The sandbox disk is full.",
        ],
        fix: "Check the paths and kinds in the sync request and that the workspace has free space; run the post-upload command by hand in the sandbox to see its error.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_DOWNLOAD_NO_BODY",
        template: "CreateOS file download has no body.",
        hooks: SYNC_OUT,
        meaning: "A file download response carried no content.",
        causes: &[
            "A proxy stripping response bodies.",
            "A CreateOS API defect.",
        ],
        fix: PROTOCOL_FIX,
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_TRANSFER_KIND_UNSUPPORTED",
        template: "Unsupported CreateOS transfer kind.",
        hooks: SYNC,
        meaning: "A sync mapping has a `kind` other than `file` or `directory`.",
        causes: &["A typo (`dir`, `folder`) or a missing kind."],
        fix: "Set each mapping's `kind` to `file` or `directory`.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_TRANSFER_HOST_PATH_NOT_ABSOLUTE",
        template: "CreateOS transfer requires an absolute host path.",
        hooks: SYNC,
        meaning: "The host-side path of a sync mapping (source for sync in, target for sync out) is relative.",
        causes: &["A path relative to the current directory."],
        fix: "Resolve host paths to absolute paths before syncing.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_FILE_MODE_INVALID",
        template: "Invalid CreateOS file mode.",
        hooks: SYNC,
        meaning: "A mapping's `mode` is not an integer between 0 and 0o777.",
        causes: &[
            "A string such as `\"755\"`, or a decimal 755 meant as octal with extra bits (e.g. 0o1755).",
        ],
        fix: "Pass the mode as a number (`0o755` = 493), permission bits only.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_TRANSFER_TIMEOUT_INVALID",
        template: "Invalid CreateOS transfer timeout.",
        hooks: SYNC_IN,
        meaning: "A post-upload command's `timeoutMs` is not an integer between 1 and 86400000.",
        causes: &["Zero, negative, fractional or string timeout."],
        fix: "Give post-upload commands an integer `timeoutMs` (milliseconds), or omit it.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_OUTBOUND_POST_UPLOAD_COMMANDS",
        template: "Outbound CreateOS transfers cannot run post-upload commands.",
        hooks: SYNC_OUT,
        meaning: "A sync-out request included post-upload commands, which only apply to uploads.",
        causes: &["Reusing a sync-in request shape for sync out."],
        fix: "Drop `postUploadCommands` from sync-out requests; run such commands with onEnvironmentExecute first.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ARCHIVE_DESTINATION_SYMLINK",
        template: "CreateOS archive destination cannot be a symlink.",
        hooks: SYNC_OUT,
        meaning: "The host directory a sandbox directory is synced into is a symbolic link; the plugin refuses to extract through it.",
        causes: &["The target path on the host is a symlink to another directory."],
        fix: "Sync into a real directory (resolve the symlink and pass the real path).",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_WORKSPACE_PREPARATION_FAILED",
        template: "CreateOS workspace preparation failed; the image must provide Bash.",
        hooks: &[on(Probe), on(AcquireLease), on(StartInteractiveSetup)],
        meaning: "The new sandbox could not create `/paperclip-workspace` with `/bin/bash -lc mkdir -p`. The sandbox was deleted again.",
        causes: &[
            "The rootfs or snapshot has no `/bin/bash` (Alpine/distroless images).",
            "The root filesystem is read-only or full.",
        ],
        fix: "Use a root filesystem or snapshot that provides `/bin/bash` and a writable `/`, then acquire again.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SETUP_IDENTITY_UNVERIFIED",
        template: "CreateOS setup sandbox identity could not be verified.",
        hooks: &[on(CaptureTemplate)],
        meaning: "Before capturing a template, the setup sandbox's marker file did not match: it may not be the sandbox this setup created.",
        causes: &[
            "The marker file `/paperclip-workspace/.paperclip-runtime/.paperclip-createos-lease` was deleted or changed during interactive setup.",
            "The setup sandbox was replaced or its ID reused.",
        ],
        fix: "Leave `/paperclip-workspace/.paperclip-runtime/` untouched while setting up; cancel this setup and start a new interactive setup.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_LEASE_DEADLINE_UNSUPPORTED",
        template: "CreateOS does not yet support leases with a guaranteed expiration deadline.",
        hooks: ACQUIRE,
        meaning: "The caller asked for a lease with `requestedExpiresAt`; CreateOS cannot guarantee to stop a sandbox at a deadline, so the plugin refuses rather than promise it.",
        causes: &[
            "A Paperclip feature (e.g. bounded runs) that requests a lease deadline on a CreateOS environment.",
        ],
        fix: "Acquire without `requestedExpiresAt`, or use an environment whose provider supports deadlines (Kubernetes with the sandbox-cr backend).",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SETUP_CLEANUP_UNCONFIRMED",
        template: "CreateOS setup failed and cleanup is unconfirmed for sandbox ${id}.",
        hooks: ACQUIRE,
        meaning: "Preparing a new lease's sandbox failed and deleting that sandbox also failed. It may still exist and bill.",
        causes: &["A CreateOS outage or timeout during workspace preparation."],
        fix: "Delete the named sandbox in the CreateOS dashboard (or `DELETE /v1/sandboxes/<id>` on the API) so it stops billing, then acquire again.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SESSION_LEASE_NOT_CACHED",
        template: "CreateOS session requires a lease cached for this environment.",
        hooks: PROCESS,
        meaning: "A login PTY or duplex channel was opened for a lease this worker did not acquire or resume (or for another company/environment).",
        causes: &[
            "The plugin worker restarted since the lease was acquired.",
            "The session names a lease from another environment.",
        ],
        fix: "Resume (or re-acquire) the lease in this environment first, then open the session with that lease.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_EXECUTION_LEASE_MISMATCH",
        template: "CreateOS execution requires a lease from this environment.",
        hooks: TRACKED,
        meaning: "An execute or sync call came with no lease ID or with a lease whose metadata belongs to another company, environment or API URL.",
        causes: &[
            "The environment's `apiUrl` changed after the lease was acquired.",
            "A lease of one environment used with another.",
        ],
        fix: "Re-acquire a fresh lease for this environment and pass that lease to the execute or sync call.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_LEASE_CLOSING",
        template: "CreateOS lease is closing or requires cleanup.",
        hooks: TRACKED,
        meaning: "The lease is being released or destroyed, the worker is shutting down, or an earlier cleanup could not be confirmed.",
        causes: &[
            "A command raced with the lease's release.",
            "An earlier session stop failed to confirm process termination.",
        ],
        fix: "Wait for the release to finish; if cleanup is unconfirmed, destroy the lease and acquire a new one.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_TIMEOUT_INVALID",
        template: "Invalid CreateOS command timeout.",
        hooks: TRACKED,
        meaning: "The call's `timeoutMs` is not an integer between 1 and 86400000.",
        causes: &["Zero, negative, fractional or string timeout in the execute call."],
        fix: "Pass an integer `timeoutMs` in milliseconds, or omit it to use the environment's `timeoutMs`.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_LEASE_NOT_IN_ENVIRONMENT",
        template: "CreateOS lease does not belong to this environment.",
        hooks: &[on(ResumeLease), on(ReleaseLease), on(DestroyLease)],
        meaning: "The lease's metadata names another company, environment or API URL than the call.",
        causes: &[
            "The environment's `apiUrl` changed after the lease was acquired.",
            "A lease passed to the wrong environment.",
        ],
        fix: "Resume, release or destroy the lease through the environment that acquired it (with its original apiUrl); delete orphaned sandboxes in the CreateOS dashboard.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_LEASE_CLEANUP_IN_PROGRESS",
        template: "CreateOS lease cleanup is already in progress.",
        hooks: RELEASE,
        meaning: "A release or destroy of this lease is already running.",
        causes: &[
            "The lease was released twice concurrently (e.g. a retry while the first call still runs).",
        ],
        fix: "Wait for the first release to finish; do not retry concurrently.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROCESS_CLEANUP_UNCONFIRMED",
        template: "CreateOS process cleanup is unconfirmed; destroy this lease before reusing it.",
        hooks: &[on(ReleaseLease)],
        meaning: "A keep-warm release (reuseLease) was refused because an earlier process cleanup on this lease could not be confirmed; keeping the sandbox could keep a stray process running.",
        causes: &["A login PTY or duplex session whose stop did not confirm process termination."],
        fix: "Destroy this lease (onEnvironmentDestroyLease) and acquire a fresh one.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_COMMAND_PROBE_FAILED",
        template: "CreateOS command probe failed.",
        kind: Kind::Returned,
        hooks: &[on(Probe)],
        meaning: "The probe created a sandbox, but the test command (`echo paperclip-createos-ready`) timed out, exited non-zero or printed something else. Returned as the probe summary.",
        causes: &[
            "The rootfs lacks `/bin/bash` or `/bin/echo`.",
            "The sandbox is too slow to run a command within `timeoutMs`.",
        ],
        fix: "Use a root filesystem with bash and coreutils, or raise `timeoutMs`, then probe again.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_LEASE_CLEANUP_BEFORE_RESUME",
        template: "CreateOS lease cleanup must finish before resume.",
        hooks: &[on(ResumeLease)],
        meaning: "The lease is being released, or its cleanup is unconfirmed, so it cannot be resumed.",
        causes: &[
            "A resume raced with a release.",
            "An earlier cleanup failure on the lease.",
        ],
        fix: "Wait for the release to finish; if cleanup is unconfirmed, destroy the lease and acquire a new one instead of resuming.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_WORKSPACE_LEASE_MISMATCH",
        template: "CreateOS workspace requires a lease from this environment.",
        hooks: &[on(RealizeWorkspace)],
        meaning: "The realize call has no lease ID, or its lease belongs to another company, environment or API URL.",
        causes: &[
            "The environment's `apiUrl` changed after the lease was acquired.",
            "The realize call was given a lease from another environment.",
        ],
        fix: "Re-acquire a fresh lease for this environment and pass that lease to the realize call.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SOURCE_TEMPLATE_KIND_UNSUPPORTED",
        template: "CreateOS can start from snapshot templates only, not ${sourceTemplateKind}.",
        hooks: &[on(StartInteractiveSetup)],
        meaning: "Interactive setup was asked to start from a template kind other than `snapshot`.",
        causes: &["A template captured by another provider (e.g. an image template)."],
        fix: "Start from a CreateOS snapshot template, or from scratch (no source template).",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_INTERACTIVE_SETUP_CLEANUP_UNCONFIRMED",
        template: "CreateOS interactive setup failed and cleanup is unconfirmed for sandbox ${sandboxId}.",
        hooks: &[on(StartInteractiveSetup)],
        meaning: "Preparing the interactive setup sandbox failed and deleting it also failed. It may still exist and bill.",
        causes: &["A CreateOS outage or timeout during setup."],
        fix: "Delete the named sandbox in the CreateOS dashboard (or `DELETE /v1/sandboxes/<id>` on the API), then start the setup again.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SETUP_NOT_IN_ENVIRONMENT",
        template: "CreateOS setup sandbox does not belong to this environment.",
        hooks: &[
            on(GetInteractiveSetup),
            on(CaptureTemplate),
            on(CancelInteractiveSetup),
        ],
        meaning: "The setup session's metadata names another company, environment, API URL or sandbox.",
        causes: &[
            "The environment's `apiUrl` changed during setup.",
            "Setup metadata from another environment.",
        ],
        fix: "Use the environment that started the setup; otherwise cancel it there and start a new setup.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_CAPTURE_WITHOUT_SETUP_LEASE",
        template: "Cannot capture a CreateOS template without a setup sandbox lease.",
        hooks: &[on(CaptureTemplate)],
        meaning: "Capture was called without the setup sandbox's ID.",
        causes: &["The setup was never started, or already cancelled or timed out."],
        fix: "Start an interactive setup, finish it, then capture with the session it returned.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_CAPTURE_TIMEOUT_INVALID",
        template: "Invalid CreateOS template capture timeout.",
        hooks: &[on(CaptureTemplate)],
        meaning: "The capture's `timeoutMs` is not an integer between 1 and 86400000.",
        causes: &["Zero, negative, fractional or string timeout."],
        fix: "Pass an integer `timeoutMs`, or omit it to use the environment's.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_DELETE_TEMPLATE_KIND_UNSUPPORTED",
        template: "CreateOS can delete snapshot templates only, not ${templateKind}.",
        hooks: &[on(DeleteTemplate)],
        meaning: "A template of another kind than `snapshot` was passed for deletion.",
        causes: &["A template captured by another provider."],
        fix: "Delete the template through the provider that captured it.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_LOGIN_ROUTE_OPEN",
        template: "CreateOS login route is already open.",
        hooks: &[on(LoginPtyOpen)],
        meaning: "A login PTY is already open on this host route.",
        causes: &["A second open for the same route, e.g. after a page reload."],
        fix: "Close the existing login session (onLoginPtyClose) before opening another on the route.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_LOGIN_HOME_INVALID",
        template: "CreateOS login session home is invalid.",
        hooks: &[on(LoginPtyOpen)],
        meaning: "The login session home is not `/tmp/paperclip-adapter-login/<uuid>`.",
        causes: &["A host that passes its own path as sessionHome."],
        fix: "Open login sessions through Paperclip, which passes `/tmp/paperclip-adapter-login/<uuid>`.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_LOGIN_HOME_PREPARATION_FAILED",
        template: "CreateOS login home preparation failed.",
        hooks: &[on(LoginPtyOpen)],
        meaning: "Creating the login session's home directory in the sandbox failed.",
        causes: &[
            "`/tmp` is full or read-only in the sandbox.",
            "The image lacks `/bin/mkdir`.",
        ],
        fix: "Free space in the sandbox or acquire a fresh lease; use an image with coreutils.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_DUPLEX_ROUTE_OPEN",
        template: "CreateOS duplex route is already open.",
        hooks: &[on(DuplexChannelOpen)],
        meaning: "A duplex channel is already open on this host route.",
        causes: &["A second open for the same route."],
        fix: "Close the existing channel (onDuplexChannelClose) before opening another on the route.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_DUPLEX_COMMAND_INVALID",
        template: "CreateOS duplex command is invalid.",
        hooks: &[on(DuplexChannelOpen)],
        meaning: "The duplex channel's command is empty or an element is empty or contains NUL.",
        causes: &["An empty `command` array or empty strings in it."],
        fix: "Pass the program and its arguments as a non-empty array of non-empty strings.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_CONFIG_INVALID",
        template: "Invalid CreateOS configuration.",
        kind: Kind::Returned,
        hooks: &[on(ValidateConfig)],
        meaning: "Validation failed with something that is not an ordinary error, so no specific message is available.",
        causes: &["A config value whose inspection itself failed (e.g. a hostile object)."],
        fix: "Rewrite the environment config as plain JSON (strings, numbers, booleans, arrays, objects) and validate again.",
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROBE_FAILED",
        template: "CreateOS probe failed.",
        kind: Kind::Returned,
        hooks: &[on(Probe)],
        meaning: "The probe failed with something that is not an ordinary error, so no specific message is available.",
        causes: &["An unexpected failure inside the probe."],
        fix: "Probe again; if it repeats, check the worker log for details and report it.",
        ..CREATEOS
    },
    // ---- additions: messages a hook surfaces that the contract list leaves out --------------
    Entry {
        code: "CREATEOS_JS_PROPERTY_OF_NULLISH",
        template: "Cannot read properties of ${receiver} (reading '${property}')",
        hooks: &[other(
            "any hook of either provider, for a parameter that is null or missing",
        )],
        meaning: "A hook parameter that must be an object (the lease, the workspace, a session) is null or undefined, so reading one of its fields fails; the text is V8's TypeError.",
        causes: &[
            "A host or script calling the hook without the parameter named in the message, or with null.",
        ],
        fix: "Pass the parameter the hook expects (see the host contract); the field named in parentheses is the one read.",
        origin: Origin::Addition(JS_RUNTIME),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_JS_NOT_A_FUNCTION",
        template: "${value} is not a function",
        hooks: &[other(
            "any hook of either provider, for a parameter of the wrong type",
        )],
        meaning: "A hook parameter that must be a string (or array) has another type, so calling one of its methods fails; the text is V8's TypeError.",
        causes: &[
            "A number, boolean or object where the host contract has a string, e.g. a numeric company id.",
        ],
        fix: "Pass the parameter with the type the host contract gives it.",
        origin: Origin::Addition(JS_RUNTIME),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PARAMS_TOO_DEEP",
        template: "Hook params are nested too deeply: at most 127 levels of arrays and objects are accepted.",
        hooks: &[other(
            "any hook of either provider, for params nested more than 127 levels deep",
        )],
        meaning: "The hook's params hold arrays or objects nested more than 127 levels deep, which the bridge between the worker's JavaScript and the Rust provider does not carry; the hook did nothing.",
        causes: &[
            "A script or a hostile caller sending deliberately nested params (no host or agent writes params this deep).",
        ],
        fix: "Send params with at most 127 levels of nested arrays and objects; the host contract's params are a few levels deep.",
        origin: Origin::Addition(PARAMS_DEPTH),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_JS_NOT_ITERABLE",
        template: "${value} is not iterable",
        hooks: &[on(Execute), on(SyncIn), on(SyncOut)],
        meaning: "A hook parameter that must be an array (`args`, `operations`, `files`) is something else; the text is V8's TypeError.",
        causes: &["An object or string where the host contract has an array."],
        fix: "Pass the parameter as a JSON array.",
        origin: Origin::Addition(JS_RUNTIME),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_NODE_INVALID_BUFFER_ARG",
        template: "The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object. ${received}",
        hooks: &[on(LoginPtyInput), on(DuplexChannelWrite)],
        meaning: "Terminal or channel input is not a string; the text is Node's ERR_INVALID_ARG_TYPE from `Buffer.from`.",
        causes: &["Input data sent as a number, boolean or object."],
        fix: "Send the input as a string.",
        origin: Origin::Addition(JS_RUNTIME),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_NODE_INVALID_PATH_ARG",
        template: "The \"path\" argument must be of type string. Received ${received}",
        hooks: SYNC,
        meaning: "A sync mapping's host path is not a string; the text is Node's ERR_INVALID_ARG_TYPE from its `path` module.",
        causes: &["A `sourcePath` or `targetPath` that is missing, a number or an object."],
        fix: "Give every sync mapping string `sourcePath` and `targetPath` values.",
        origin: Origin::Addition(JS_RUNTIME),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ABORTED_BY_TIMEOUT",
        template: "The operation was aborted due to timeout",
        hooks: API,
        meaning: "A CreateOS API request did not finish within the operation timeout (`timeoutMs`); the text is Node's `AbortSignal.timeout` DOMException, which the original surfaces.",
        causes: &[
            "A slow or unreachable CreateOS endpoint.",
            "A `timeoutMs` too small for the operation.",
        ],
        fix: "Check that the CreateOS API is reachable and healthy, or raise `timeoutMs`.",
        origin: Origin::Addition(
            "The original's fetch is aborted by `AbortSignal.timeout`, whose DOMException message reaches the host unchanged.",
        ),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ABORTED",
        template: "This operation was aborted",
        hooks: API,
        meaning: "A CreateOS API request was aborted before it finished (the worker is shutting down or the call was cancelled); the text is Node's AbortError.",
        causes: &["The host shut the worker down during the call."],
        fix: "Retry the call once the worker is running again.",
        origin: Origin::Addition(
            "The original's fetch is aborted through an AbortController, whose AbortError message reaches the host unchanged.",
        ),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_OPERATION_ABORTED",
        template: "The operation was aborted",
        hooks: API,
        meaning: "A CreateOS operation was aborted through its signal without a reason; the text is the DOMException AbortError default.",
        causes: &["The host shut the worker down during the call."],
        fix: "Retry the call once the worker is running again.",
        origin: Origin::Addition(
            "The default message of an AbortSignal's DOMException in the original's runtime.",
        ),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ARCHIVE_WORKER_FAILED",
        template: "CreateOS archive worker failed.",
        hooks: SYNC,
        meaning: "The background task that packs or unpacks a sync archive on the host ended without a result.",
        causes: &[
            "The worker is shutting down during the sync.",
            "An internal failure of the archive task.",
        ],
        fix: "Run the sync again; if it repeats, report it with the worker log.",
        origin: Origin::Addition(
            "Added by this implementation: sync archives are built and read on a blocking task, whose loss has no counterpart in the original.",
        ),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_DUPLEX_DATA_NOT_BASE64",
        template: "CreateOS duplex write data is not canonical base64.",
        hooks: &[on(DuplexChannelWrite)],
        meaning: "The data of a duplex channel write is not canonical base64, so it cannot be decoded to the bytes to send.",
        causes: &["Data sent as plain text, or base64 with stray characters or wrong padding."],
        fix: "Send duplex data as canonical (padded, standard-alphabet) base64.",
        origin: Origin::Addition(
            "The vendor fork's duplex channel text for invalid write data; the contract list has no duplex entries for it.",
        ),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROBE_SUCCEEDED",
        kind: Kind::Returned,
        template: "CreateOS sandbox creation and command execution succeeded.",
        hooks: &[on(Probe)],
        meaning: "The probe's summary when it could create a sandbox and run a command in it: the environment works.",
        causes: &["A working CreateOS environment."],
        fix: "Nothing to fix: the environment is ready to use.",
        origin: Origin::Addition(SUMMARY),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_HEALTHY",
        kind: Kind::Returned,
        template: "CreateOS provider loaded; probe an environment to check connectivity.",
        hooks: &[on(Health)],
        meaning: "The health check's message: the worker runs; it makes no API call, so it says nothing about an environment.",
        causes: &["A running CreateOS worker."],
        fix: "Nothing to fix; probe an environment to check it can reach CreateOS.",
        origin: Origin::Addition(SUMMARY),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ACQUIRE_STOPPED_BY_SHUTDOWN",
        template: "CreateOS lease acquisition was stopped by worker shutdown; nothing was left behind.",
        hooks: &[on(AcquireLease), on(Probe)],
        meaning: "The plugin worker began shutting down while this acquire (or probe) was in flight, or before it started; the sandbox it had created, if any, was deleted before the worker exited.",
        causes: &[
            "The host stopped or restarted the plugin (upgrade, disable, host shutdown) during a run start or an environment test.",
        ],
        fix: "Nothing to clean up: start the run or the probe again once the plugin is back.",
        origin: Origin::Addition(BEYOND_ORIGINAL),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_PROBE_SANDBOX_NOT_DELETED",
        template: "CreateOS probe could not delete sandbox ${id}; delete it in CreateOS so that it stops billing.",
        kind: Kind::Warning,
        hooks: &[on(Probe)],
        meaning: "Worker log warning: an environment probe (or a probe stopped by worker shutdown) could not delete the sandbox it created, so the sandbox may still exist and bill. The probe itself rejects with the delete's own error, as the original did; this line names the sandbox.",
        causes: &[
            "The CreateOS API became unreachable or returned an error or a garbled reply to the delete.",
            "The API key lost access to delete sandboxes.",
        ],
        fix: "Delete the named sandbox in the CreateOS dashboard (or `DELETE /v1/sandboxes/<id>` on the API), then probe again.",
        origin: Origin::Addition(BEYOND_ORIGINAL),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_CREATION_CLEANUP_UNCONFIRMED",
        template: "CreateOS sandbox creation could not be confirmed and cleanup is unconfirmed; delete the sandbox named ${name} if it exists.",
        hooks: &[on(AcquireLease), on(Probe), on(StartInteractiveSetup)],
        meaning: "Creating the sandbox failed without a definite answer (the reply was lost, cut, unreadable or a 5xx, or the deadline passed), so the sandbox may exist; finding it by the ownership name it was created with (`pc-` and 16 hex digits), or deleting it, failed as well.",
        causes: &[
            "The CreateOS API became unreachable or returned errors while the create was answered and again during the cleanup lookup.",
            "The API key lost access to list or delete sandboxes.",
        ],
        fix: "List the account's sandboxes in CreateOS and delete the one with the name shown in the message (names are unique among live sandboxes; there is at most one); then acquire again.",
        origin: Origin::Addition(BEYOND_ORIGINAL),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_FORK_UNCONFIRMED",
        template: "CreateOS fork of template ${template} could not be confirmed; a sandbox forked from it at ${requestedAt} may exist and was not deleted.",
        hooks: &[on(AcquireLease), on(Probe), on(StartInteractiveSetup)],
        meaning: "Forking the configured snapshot template failed without a definite answer (the reply was lost, cut, unreadable or a 5xx, or the deadline passed), so a fork may exist. A fork request cannot carry a name, so the provider cannot tell such a fork from any other sandbox and deletes nothing. The time is the request's, in UTC.",
        causes: &[
            "The CreateOS API became unreachable, answered with a server error, or did not answer within `timeoutMs` while forking.",
        ],
        fix: "List the account's sandboxes in CreateOS and delete any sandbox forked from the named template (`forked_from`) that was created at about the time shown and is not in use; then acquire again.",
        origin: Origin::Addition(BEYOND_ORIGINAL),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SYNC_SOURCE_REPEATED_DIRECTORY",
        template: "CreateOS sync source repeats a directory through symbolic links at ${path}; followSymlinks needs a tree without link loops or two links to one directory.",
        hooks: SYNC_IN,
        meaning: "A directory sync-in with `followSymlinks: true` reached the same host directory (same device and inode) twice while following links, so the walk stopped before copying the tree again and again; nothing was uploaded.",
        causes: &[
            "A link loop in the source directory, such as `a -> .` or `up -> ..`.",
            "Two links to one directory, or a link to a directory that is also in the tree.",
        ],
        fix: "Remove the link named in the message (or add it to `exclude`), or sync without `followSymlinks` so links are kept as links.",
        origin: Origin::Addition(LINK_LOOP),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SYNC_OUT_REPEATED_DIRECTORY",
        template: "CreateOS sync-out source ${sourcePath} repeats a directory through symbolic links; followSymlinks needs a tree without link loops or two links to one directory.",
        hooks: SYNC_OUT,
        meaning: "A directory sync-out with `followSymlinks: true` found, walking the sandbox tree as `tar -h` would, a link loop or a directory reached twice (same device and inode); `tar -h` would have copied the tree again and again, so nothing was archived or downloaded.",
        causes: &[
            "A link loop in the sandbox directory, such as `a -> .` or `up -> ..`.",
            "Two links to one directory, or a link to a directory that is also in the tree.",
        ],
        fix: "Remove the looping link in the sandbox (or add it to `exclude`), or sync out without `followSymlinks` so links are kept as links.",
        origin: Origin::Addition(LINK_LOOP),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_SYNC_OUT_FILE_TOO_LARGE",
        template: "CreateOS sync-out file ${sourcePath} is larger than the 8 GiB limit; nothing was written to the target.",
        hooks: SYNC_OUT,
        meaning: "A file sync-out declared or streamed more than 8 GiB (the outbound disk guard the Kubernetes provider has too; a sparse file counts at its full size). The download stopped as it passed the limit; the partial copy was removed and the target is unchanged.",
        causes: &[
            "A very large file in the sandbox.",
            "A sparse file (for example one made with `truncate -s 10G`): it takes no disk in the sandbox, but its size is what would be copied.",
        ],
        fix: "Sync a smaller file, or split or compress it in the sandbox first.",
        origin: Origin::Addition(HOST_BOUND),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ARCHIVE_EXTENDED_HEADER_TOO_LARGE",
        template: "CreateOS archive has an extended header of ${size} bytes (a PAX header or GNU long name), over the 1 MiB limit; nothing was extracted.",
        hooks: SYNC_OUT,
        meaning: "The archive of a directory sync-out carries a PAX extended header or a GNU long-name / long-link member larger than 1 MiB. Such a header is read into memory whole, so it is refused when its header block arrives, before it is read; nothing was extracted.",
        causes: &[
            "An archive forged in the sandbox (a replaced `tar`, or a tampered scratch file); real headers hold a path and a few fields.",
        ],
        fix: "Check the sandbox for a replaced `tar` or files with absurdly long names; sync out ordinary files.",
        origin: Origin::Addition(HOST_BOUND),
        ..CREATEOS
    },
    Entry {
        code: "CREATEOS_ARCHIVE_THROUGH_SYMLINK",
        template: "CreateOS archive entry would be written through the symbolic link ${path}; links in the destination are never followed.",
        hooks: SYNC_OUT,
        meaning: "Extracting a directory sync-out reached a symbolic link where a directory of the entry's path should be: one already in the target on the host, or one the archive itself created before. Nothing is written through a link (that is how a sandbox could write outside the target); entries extracted before it stay.",
        causes: &[
            "A link left in the target by an earlier sync-out, with a directory of the same name in the sandbox now.",
            "An archive forged in the sandbox with a link and then an entry beneath it.",
        ],
        fix: "Remove the link named in the message from the target (or sync out into a fresh directory), then sync again.",
        origin: Origin::Addition(HOST_BOUND),
        ..CREATEOS
    },
];

const PARAMS_DEPTH: &str = "Added by this implementation: the bridge carries params up to 127 levels deep; deeper params fail with this message instead of the JavaScript engine's `Maximum call stack size exceeded` or the JSON parser's recursion limit.";
const JS_RUNTIME: &str = "The original raises this as a JavaScript runtime error for a malformed hook parameter; reproduced with the runtime's exact text, as the host would see it from the original.";
const SUMMARY: &str = "A success text of the original (a summary or health message); the contract list holds only failures.";
const BEYOND_ORIGINAL: &str = "Added by this implementation: where the original left a cloud resource behind without saying so, hung, or let a library's internal text reach the user, this message says what happened and what to do.";
const HOST_BOUND: &str = "Added by this implementation: the original wrote whatever the sandbox sent to the host (a sparse file at full size, a header of any size into memory, entries through links); this refuses it with a bound or a rule, before anything lands.";
const LINK_LOOP: &str = "Added by this implementation: the original followed link loops until the host ran out of memory or the path hit ELOOP; this fails at the first repeated directory, in bounded memory.";
