// The plugin manifest, the original's default export: the host keys installed plugins, leases
// and capabilities on it, so every field stays byte-for-byte the same, except the config
// schema's additions and rewritten descriptions that docs/wire-parity.md lists (the host's
// form shows them; __test__/manifest.spec.js holds the rest to the recording).
const manifest = {
  "id": "paperclip.kubernetes-sandbox-provider",
  "apiVersion": 1,
  "version": "0.1.0-alpha.1",
  "displayName": "Kubernetes Sandbox (alpha)",
  "description": "Built on kubernetes-sigs/agent-sandbox (v1alpha1). ALPHA — expect breaking changes as the upstream CRD evolves. First-party Paperclip sandbox-provider plugin for Kubernetes.",
  "author": "Paperclip",
  "categories": [
    "automation"
  ],
  "capabilities": [
    "environment.drivers.register"
  ],
  "entrypoints": {
    "worker": "./dist/worker.js"
  },
  "environmentDrivers": [
    {
      "driverKey": "kubernetes",
      "kind": "sandbox_provider",
      "supportsLoginPty": true,
      "displayName": "Kubernetes",
      "description": "Dispatches agent runs in per-tenant Kubernetes namespaces. The sandbox-cr backend uses kubernetes-sigs/agent-sandbox for multi-command exec and managed login PTY.",
      "configSchema": {
        "type": "object",
        "properties": {
          "inCluster": {
            "type": "boolean",
            "description": "When true, the plugin uses the in-pod ServiceAccount credentials. Requires paperclip-server to be running inside the target cluster."
          },
          "kubeconfig": {
            "type": "string",
            "format": "secret-ref",
            "description": "Inline kubeconfig YAML. Paste a kubeconfig or an existing Paperclip secret reference; pasted values are stored as company secrets."
          },
          "namespacePrefix": {
            "type": "string",
            "description": "Prefix for the per-company tenant namespace (default: paperclip-)."
          },
          "companySlug": {
            "type": "string",
            "description": "Override the auto-derived company slug used in the tenant namespace name."
          },
          "imageRegistry": {
            "type": "string",
            "description": "Registry host and optional path that replaces ghcr.io/paperclipai in the built-in runtime images, e.g. `ghcr.io/acme` or `registry.example:5000/team`. An `https://` or `http://` scheme is accepted and left out of the image references. Images named in runtimeImages are not rewritten."
          },
          "runtimeImages": {
            "type": "object",
            "additionalProperties": {
              "type": "string"
            },
            "description": "Runtime image per adapter type, each a full image reference without scheme, e.g. `{\"claude_local\": \"ghcr.io/acme/agent-runtime-claude:1.4\"}`. Merged over the built-in images (other adapters keep theirs). An adapter type outside the built-ins runs when it is named here, with no environment keys, no egress FQDNs of its own and the probe `sh -c true`."
          },
          "imageAllowList": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "Glob patterns of allowed `target.imageOverride` values. Empty list = no override permitted."
          },
          "imagePullSecrets": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "Names of pre-created Docker image pull secrets in the tenant namespace."
          },
          "egressAllowFqdns": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "Additional FQDNs to allow egress to from agent pods. Adapter-default FQDNs (e.g. api.anthropic.com) are added automatically."
          },
          "egressAllowCidrs": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "Additional CIDRs to allow egress to from agent pods."
          },
          "egressMode": {
            "type": "string",
            "enum": [
              "standard",
              "cilium"
            ],
            "description": "Network policy mode. `cilium` enables FQDN-based egress filtering via CiliumNetworkPolicy."
          },
          "paperclipServerPodSelector": {
            "type": "object",
            "additionalProperties": {
              "type": "string"
            },
            "description": "Labels on the Paperclip API pod accepting agent callbacks on port 3100 (default: app=paperclip-server)."
          },
          "runtimeClassName": {
            "type": "string",
            "description": "Optional RuntimeClass for pod isolation (e.g. `kata-fc` for Firecracker-backed microVMs). Cluster must have the RuntimeClass installed."
          },
          "serviceAccountAnnotations": {
            "type": "object",
            "additionalProperties": {
              "type": "string"
            },
            "description": "Annotations applied to the per-tenant ServiceAccount (e.g. `eks.amazonaws.com/role-arn` for IRSA)."
          },
          "jobTtlSecondsAfterFinished": {
            "type": "integer",
            "minimum": 0,
            "description": "Seconds after a Job completes before it is garbage-collected (default: 900)."
          },
          "podActivityDeadlineSec": {
            "type": "integer",
            "minimum": 1,
            "description": "Hard ceiling on a single run's wall-clock time (default: 3600)."
          },
          "unschedulableGraceSec": {
            "type": "integer",
            "minimum": 1,
            "description": "Seconds a run's pod may stay unschedulable (not enough CPU or memory on any node, a node selector no node matches) before the run fails with the scheduler's message instead of waiting out its deadline (default: 60). Raise it when a cluster autoscaler adds nodes on demand."
          },
          "adapterType": {
            "type": "string",
            "description": "The adapter type that Jobs in this environment will run (e.g. `claude_local`, `codex_local`). Defaults to `claude_local`. Each environment is bound to one adapter; create multiple environments for different adapters."
          },
          "backend": {
            "type": "string",
            "enum": [
              "sandbox-cr"
            ],
            "description": "sandbox-cr (default, alpha — requires kubernetes-sigs/agent-sandbox installed); job is incompatible with the advertised login PTY capability"
          }
        },
        "anyOf": [
          {
            "required": [
              "inCluster"
            ]
          },
          {
            "required": [
              "kubeconfig"
            ]
          }
        ]
      }
    }
  ]
};

export default manifest;
