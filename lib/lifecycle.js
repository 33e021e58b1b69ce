// One lease lifecycle through a forked plugin worker, shared by `npm start` (scripts/start.js) and
// `paperclip-sandbox check` (bin/paperclip-sandbox.js):
//
//   fork + initialize -> validate -> probe (its summary, one check per line) -> acquire -> realize
//   -> sync in a small workspace -> execute (output streams live) -> sync out (and verify) ->
//   release -> shutdown
//
// With `deep` (`check --deep`), one more lease right after the probe: acquire -> execute the
// adapter's probe command (`metadata.adapter.probeCommand` of the probe, e.g. `claude --version`)
// -> release, each step timed.
//
// (Kubernetes `job` leases: acquire -> execute -> release; that backend has no workspace.)
//
// Cleanup is guaranteed: whatever lease was acquired and not released is destroyed when a step
// fails or when `interrupt()` is called (Ctrl-C), through the worker if it is still alive, else
// through a freshly forked one (a terminal's Ctrl-C reaches the worker too); the worker is shut
// down (killed if it does not exit) and the local sync directory removed.

import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";

import { ForkedWorker, pluginRoot } from "./forked-worker.js";

/** The worker file, relative to the working directory when it is inside it (plugins/x/dist/worker.js). */
function workerLabel(provider) {
  let worker;
  try {
    worker = path.join(pluginRoot(provider), "dist/worker.js");
  } catch {
    return `the ${provider} plugin worker`;
  }
  const relative = path.relative(process.cwd(), worker);
  return relative.startsWith("..") ? worker : relative;
}

/** Thrown by steps that would start after an interrupt. */
export class Interrupted extends Error {
  constructor() {
    super("interrupted");
    this.name = "Interrupted";
  }
}

/** A configuration rejected by the provider's own validation (the CLI exits 2 for it). */
export class ConfigRejected extends Error {
  constructor(message) {
    super(message);
    this.name = "ConfigRejected";
  }
}

/** A call to a worker that exited (a terminal's Ctrl-C reaches the worker too). */
class WorkerGone extends Error {
  constructor() {
    super("the plugin worker exited");
    this.name = "WorkerGone";
  }
}

/** `worker.call`, rejected with WorkerGone if the worker exits first (a dead stdin never replies). */
function callOn(worker, method, params, options) {
  if (!alive(worker)) return Promise.reject(new WorkerGone());
  return Promise.race([
    worker.call(method, params, options).catch((error) => {
      throw error.message === "worker stream closed before the reply" ? new WorkerGone() : error;
    }),
    worker.exited.then(() => {
      throw new WorkerGone();
    }),
  ]);
}

/** Forks the provider's plugin worker; a write to it after it died is an error event, not a crash. */
async function forkWorker(provider, env) {
  const worker = await ForkedWorker.start(provider, { env });
  worker.child.stdin.on("error", () => {});
  return worker;
}

const MASK = "****";

/**
 * Progress lines, one per step with the time it took, and a record of every step for summaries.
 * Every line goes through `redact`, which replaces each registered secret value with ****.
 */
export class Reporter {
  failures = 0;
  /** [{label, ok, ms, detail?, error?}] in order. */
  steps = [];
  /** Set by the lifecycle once interrupted: failing steps then read "interrupted". */
  interrupted = false;
  #secrets = new Set();
  #pending = null;

  constructor({ stream = process.stdout } = {}) {
    this.stream = stream;
    this.live = Boolean(stream.isTTY);
  }

  /** Registers values that must never be printed (API keys, kubeconfigs, tokens in them). */
  addSecrets(values) {
    for (const value of values) if (typeof value === "string" && value.length >= 4) this.#secrets.add(value);
  }

  redact(text) {
    let out = String(text);
    // Longest first, so a kubeconfig is masked whole before the token inside it.
    for (const secret of [...this.#secrets].sort((a, b) => b.length - a.length)) out = out.split(secret).join(MASK);
    return out;
  }

  #clearPending() {
    if (this.#pending) {
      this.stream.write("\r\x1b[K");
      this.#pending = null;
    }
  }

  line(text = "") {
    this.#clearPending();
    this.stream.write(`${this.redact(text)}\n`);
  }

  section(title) {
    this.line();
    this.line(title);
  }

  note(text) {
    this.line(`      ${text}`);
  }

  /** Runs `work`, prints `✓ label (ms)  detail` or `✗ label: message`, and returns its result. */
  async step(label, work, describe = () => undefined, { raw = false } = {}) {
    const started = performance.now();
    if (this.live) {
      this.#clearPending();
      this.#pending = label;
      this.stream.write(this.redact(`  … ${label}`));
    }
    try {
      const result = await work();
      const ms = Math.round(performance.now() - started);
      const detail = describe(result);
      this.steps.push({ label, ok: true, ms, ...(detail ? { detail: this.redact(detail) } : {}) });
      this.line(`  ✓ ${label} (${ms} ms)${detail ? `  ${detail}` : ""}`);
      return result;
    } catch (error) {
      const ms = Math.round(performance.now() - started);
      const message = !raw && (this.interrupted || error instanceof Interrupted) ? "interrupted" : (error?.message ?? String(error));
      if (!(error instanceof Interrupted)) {
        this.failures += 1;
        this.steps.push({ label, ok: false, ms, error: this.redact(message), ...(message === "interrupted" ? { interrupted: true } : {}) });
        this.line(`  ✗ ${label} (${ms} ms): ${message}`);
      }
      throw error;
    }
  }
}

/** The files synced into the sandbox, and what the command run there writes back. */
const SYNC_INPUT = "paperclip sandbox check\n";
const SYNC_OUTPUT = `checked: ${SYNC_INPUT}`;
const CHECK_SCRIPT = [
  'echo "hello from $(uname -s) on $(hostname) in $(pwd)"',
  "for i in 1 2 3; do echo \"step $i\"; sleep 0.3; done",
  'printf "checked: %s\\n" "$(cat input.txt)" > output.txt',
  "echo wrote output.txt",
  "",
].join("\n");

const DEFAULT_GRACE_MS = 20_000;

/** The embedded emulators' options for a lifecycle run (job pods run a stand-in for the agent shim). */
export const EMULATOR_ARGS = {
  createos: ["--transition-ms", "50"],
  kubernetes: [
    "--fast",
    "--command-override",
    `/usr/local/bin/paperclip-agent-shim=${JSON.stringify(["/bin/sh", "-c", "echo job pod ran its command"])}`,
  ],
};

function withTimeout(promise, ms) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((resolve) => {
      timer = setTimeout(() => resolve({ timedOut: true }), ms);
      timer.unref?.();
    }),
  ]);
}

function alive(worker) {
  return worker && worker.child.exitCode === null && worker.child.signalCode === null;
}

/**
 * A lifecycle on one provider. `backends` (Kubernetes only) lists the backends to run in turn,
 * each with its own lease; `config` is the environment's driver config, validated and probed as
 * is (its `backend` is set per lease). `run()` resolves with {ok, interrupted, configRejected,
 * failure}; it never rejects.
 */
export class Lifecycle {
  #leases = new Map();
  #inflight = null;
  #cleanup = null;
  #invocations = 0;
  #workDir = null;
  #fresh = null;
  worker = null;
  interrupted = false;
  /** The probe's result (its `metadata.adapter` is what `deep` runs). */
  probe = null;

  constructor({
    provider,
    config,
    backends = provider === "kubernetes" ? [config.backend ?? "sandbox-cr"] : [null],
    reporter = new Reporter(),
    workerEnv = {},
    companyId = "paperclip-check",
    environmentId = "paperclip-check-env",
    runId = "paperclip-check",
    graceMs = DEFAULT_GRACE_MS,
    targetGone = null,
    deep = false,
  }) {
    if (provider !== "createos" && provider !== "kubernetes") throw new Error(`unknown provider: ${provider}`);
    Object.assign(this, { provider, config, backends, reporter, workerEnv, companyId, environmentId, runId, graceMs, targetGone, deep });
  }

  #base() {
    return { driverKey: this.provider, companyId: this.companyId, environmentId: this.environmentId };
  }

  #invocation() {
    return { invocation: { id: `${this.runId}-${++this.#invocations}`, scope: { companyId: this.companyId } } };
  }

  #configFor(backend) {
    return backend ? { ...this.config, backend } : this.config;
  }

  #call(method, params, options) {
    return callOn(this.worker, method, params, options);
  }

  /** A reported step that is refused once interrupted, and tracked while in flight. */
  async #step(label, work, describe) {
    if (this.interrupted) throw new Interrupted();
    const promise = this.reporter.step(label, work, describe);
    this.#inflight = promise;
    try {
      return await promise;
    } finally {
      if (this.#inflight === promise) this.#inflight = null;
    }
  }

  async run() {
    const failuresBefore = this.reporter.failures;
    let failure = null;
    try {
      await this.#steps();
    } catch (error) {
      failure = error;
    }
    await this.cleanup();
    const ok = !failure && !this.interrupted && this.reporter.failures === failuresBefore;
    return {
      ok,
      interrupted: this.interrupted,
      configRejected: failure instanceof ConfigRejected,
      failure: failure && !(failure instanceof Interrupted) ? failure : null,
    };
  }

  /** Ctrl-C: stop starting steps, destroy what was acquired, shut the worker down. */
  interrupt() {
    if (!this.interrupted) {
      this.interrupted = true;
      this.reporter.interrupted = true;
      this.reporter.line("\n  Interrupted: cleaning up (press Ctrl-C again to exit at once)…");
    }
    return this.cleanup();
  }

  /** Force: kill the worker without waiting (second Ctrl-C). */
  kill() {
    this.worker?.kill();
  }

  async #steps() {
    const plugin = this.provider;
    // Assigned inside the step, so a cleanup racing it (Ctrl-C during the fork) sees the worker.
    await this.#step(`fork ${workerLabel(plugin)} and initialize`, async () => {
      this.worker = await forkWorker(plugin, this.workerEnv);
    });
    const worker = this.worker;
    // Validated and probed as stored; each lease then runs on its backend (the host's validation
    // refuses `backend: "job"` in a stored config, as the driver advertises login PTY).
    const firstConfig = this.config;
    await this.#step(
      "validate config",
      async () => {
        const result = await this.#call("environmentValidateConfig", { driverKey: plugin, config: firstConfig });
        if (!result.ok) {
          throw new ConfigRejected(`the provider rejected the config: ${(result.errors ?? []).join("; ") || "no reason given"}`);
        }
        return result;
      },
      (r) => `ok=${r.ok}${r.warnings?.length ? `; warnings: ${r.warnings.join("; ")}` : ""}`,
    );
    // The probe's summary is one check per line (Kubernetes): the first on the step's line, the
    // others below it, whether the probe passed or not.
    let probeLines = [];
    try {
      this.probe = await this.#step(
        "probe",
        async () => {
          const result = await this.#call("environmentProbe", { ...this.#base(), config: firstConfig }, this.#invocation());
          const [first, ...rest] = String(result.summary ?? "").split("\n");
          probeLines = rest;
          if (!result.ok) throw new Error(first || "probe failed");
          return result;
        },
        (r) => String(r.summary ?? "").split("\n")[0],
      );
    } finally {
      for (const line of probeLines) this.reporter.note(line);
    }
    if (this.deep) for (const backend of this.backends) await this.#deepLease(backend);
    for (const backend of this.backends) await this.#leaseLifecycle(backend);
  }

  /**
   * `check --deep`: one whole lease that runs the adapter's own probe command (which the probe
   * reports in `metadata.adapter`), each step timed: acquire -> execute -> release.
   */
  async #deepLease(backend) {
    const adapter = this.probe?.metadata?.adapter;
    const argv = adapter?.probeCommand;
    const tag = `${backend ? `[${backend}] ` : ""}deep: `;
    if (!Array.isArray(argv) || argv.length === 0) {
      await this.#step(`${tag}the adapter's probe command`, async () => {
        throw new Error("the probe named no adapter probe command (metadata.adapter), so there is nothing to run");
      });
    }
    const config = this.#configFor(backend);
    const lease = await this.#acquire(`${tag}acquire lease for ${adapter.adapterType} (${adapter.runtimeImage})`, config, `${this.runId}-deep-${backend ?? "run"}`);
    await this.#step(
      `${tag}execute ${argv.join(" ")}`,
      () => this.#execute({ ...this.#base(), config, lease, command: argv[0], args: argv.slice(1), timeoutMs: 120_000 }),
      (r) => `exit ${r.exitCode}${r.stdout?.trim() ? `: ${r.stdout.trim().split("\n")[0]}` : ""}`,
    );
    await this.#release(`${tag}release lease`, config, lease);
  }

  /** Acquires a lease (tracked for cleanup until released). */
  #acquire(label, config, runId) {
    return this.#step(
      label,
      async () => {
        const acquired = await this.#call("environmentAcquireLease", { ...this.#base(), config, runId }, this.#invocation());
        this.#leases.set(acquired.providerLeaseId, { lease: acquired, config });
        return acquired;
      },
      (l) => (this.provider === "kubernetes" ? `${l.metadata?.namespace}/${l.providerLeaseId}` : `sandbox ${l.providerLeaseId}`),
    );
  }

  /** Releases a lease; one whose release failed stays tracked, so cleanup destroys it. */
  async #release(label, config, lease) {
    this.#leases.delete(lease.providerLeaseId);
    try {
      await this.#step(label, () =>
        this.#call(
          "environmentReleaseLease",
          { ...this.#base(), config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata },
          this.#invocation(),
        ),
      );
    } catch (error) {
      this.#leases.set(lease.providerLeaseId, { lease, config });
      throw error;
    }
  }

  async #leaseLifecycle(backend) {
    const config = this.#configFor(backend);
    const tag = backend ? `[${backend}] ` : "";
    const lease = await this.#acquire(`${tag}acquire lease`, config, `${this.runId}-${backend ?? "run"}`);

    if (backend === "job") {
      await this.#step(
        `${tag}execute (output streams live)`,
        () => this.#execute({ ...this.#base(), config, lease, command: "paperclip-check", timeoutMs: 120_000 }),
        (r) => `exit ${r.exitCode}`,
      );
    } else {
      const realized = await this.#step(
        `${tag}realize workspace`,
        () => this.#call("environmentRealizeWorkspace", { ...this.#base(), config, lease, workspace: {} }, this.#invocation()),
        (r) => `cwd ${r.cwd}`,
      );
      const cwd = realized.cwd;
      const remoteDir = path.posix.join(cwd, "paperclip-check");
      // The host keeps the realized workspace on the lease it hands to sync calls.
      const workspaceLease = { ...lease, metadata: { ...lease.metadata, remoteCwd: realized.metadata?.remoteCwd ?? cwd } };
      const local = await this.#localWorkspace(backend ?? "createos");
      await this.#step(
        `${tag}sync in a small workspace`,
        () =>
          this.#call(
            "environmentSyncIn",
            {
              ...this.#base(),
              config,
              lease: workspaceLease,
              operations: [
                { operationId: "check-sync-in", files: [{ sourcePath: local.source, targetPath: remoteDir, kind: "directory" }] },
              ],
            },
            this.#invocation(),
          ),
        (r) => `${r.operations?.[0]?.filesTransferred} files, ${r.operations?.[0]?.bytesTransferred} bytes -> ${remoteDir}`,
      );
      const shell = this.provider === "createos" ? "bash" : "sh";
      await this.#step(
        `${tag}execute (output streams live)`,
        () =>
          this.#execute({
            ...this.#base(),
            config,
            lease,
            command: shell,
            args: ["-c", `cd '${remoteDir}' && sh check.sh`],
            ...(this.provider === "createos" ? { cwd } : {}),
            timeoutMs: 120_000,
          }),
        (r) => `exit ${r.exitCode}`,
      );
      await this.#step(
        `${tag}sync out and verify`,
        async () => {
          const target = path.join(local.root, "back/output.txt");
          const result = await this.#call(
            "environmentSyncOut",
            {
              ...this.#base(),
              config,
              lease: workspaceLease,
              operations: [
                {
                  operationId: "check-sync-out",
                  files: [{ sourcePath: path.posix.join(remoteDir, "output.txt"), targetPath: target, kind: "file" }],
                },
              ],
            },
            this.#invocation(),
          );
          const content = await readFile(target, "utf8");
          if (content !== SYNC_OUTPUT) throw new Error(`synced-out output.txt is ${JSON.stringify(content)}, expected ${JSON.stringify(SYNC_OUTPUT)}`);
          return result;
        },
        (r) => `${r.operations?.[0]?.filesTransferred} file, ${r.operations?.[0]?.bytesTransferred} bytes; content verified`,
      );
    }

    await this.#release(`${tag}release lease`, config, lease);
  }

  /** A local directory with the workspace to sync in: check.sh and input.txt. */
  async #localWorkspace(name) {
    if (!this.#workDir) this.#workDir = await mkdtemp(path.join(tmpdir(), "paperclip-check-"));
    const root = path.join(this.#workDir, name);
    const source = path.join(root, "workspace");
    await mkdir(source, { recursive: true });
    await writeFile(path.join(source, "check.sh"), CHECK_SCRIPT);
    await writeFile(path.join(source, "input.txt"), SYNC_INPUT);
    return { root, source };
  }

  /** An execute call whose execute.log chunks are printed the moment they arrive; non-zero exit fails. */
  async #execute(params) {
    const call = this.#invocation();
    const stop = this.worker.rpc.onNotification((note) => {
      if (note.method !== "execute.log" || note.paperclipInvocationId !== call.invocation.id) return;
      for (const line of String(note.params.chunk).split("\n").filter(Boolean)) this.reporter.note(`[${note.params.stream}] ${line}`);
    });
    try {
      const result = await this.#call("environmentExecute", params, call);
      if (result.timedOut) throw new Error("the command timed out");
      if (result.exitCode !== 0) throw new Error(`the command exited with ${result.exitCode}${result.signal ? ` (${result.signal})` : ""}`);
      return result;
    } finally {
      stop();
    }
  }

  /** Idempotent: destroys leftover leases, waits (bounded) for the call in flight, shuts down. */
  cleanup() {
    this.#cleanup ??= this.#doCleanup();
    return this.#cleanup;
  }

  async #doCleanup() {
    await this.#destroyLeftovers();
    if (this.#inflight) {
      const settled = await withTimeout(
        this.#inflight.then(
          () => ({}),
          () => ({}),
        ),
        this.graceMs,
      );
      if (settled.timedOut) this.reporter.line(`  ! a call still had not returned after ${this.graceMs} ms; not waiting for it`);
    }
    // An acquire that was in flight may have produced a lease meanwhile.
    await this.#destroyLeftovers();
    if (this.worker) {
      if (alive(this.worker)) {
        const worker = this.worker;
        await this.reporter
          .step(
            "shutdown",
            async () => {
              const outcome = await withTimeout(
                Promise.race([worker.shutdown(), worker.exited.then((exit) => ({ exit, reply: null }))]),
                10_000,
              );
              if (outcome.timedOut) {
                worker.kill();
                throw new Error("the worker did not exit within 10 s of shutdown; killed it");
              }
              const { code, signal } = outcome.exit;
              // A terminal's Ctrl-C reaches the worker too; it exiting on it is expected then.
              if (code !== 0 && !(this.interrupted && signal === "SIGINT")) throw new Error(`the worker exited with ${code ?? signal}`);
              return outcome;
            },
            ({ exit }) => `worker exited with ${exit.code ?? exit.signal}`,
            { raw: true },
          )
          .catch(() => {});
      } else {
        const { exitCode, signalCode } = this.worker.child;
        this.reporter.line(`  · the worker had already exited (${signalCode ?? `code ${exitCode}`})`);
      }
    }
    if (this.#fresh) {
      const fresh = this.#fresh;
      await withTimeout(fresh.shutdown(), 10_000).catch(() => {});
      fresh.kill();
    }
    if (this.#workDir) await rm(this.#workDir, { recursive: true, force: true }).catch(() => {});
  }

  /** A live worker for cleanup calls: the run's own, else a freshly forked one. */
  async #cleanupWorker(replace = false) {
    if (!replace && alive(this.worker)) return this.worker;
    if (alive(this.#fresh)) return this.#fresh;
    this.#fresh = await this.reporter.step(
      "cleanup: fork a fresh worker (the first one is gone)",
      () => forkWorker(this.provider, this.workerEnv),
      undefined,
      { raw: true },
    );
    return this.#fresh;
  }

  async #destroyLeftovers() {
    if (this.#leases.size === 0) return;
    const leftovers = [...this.#leases.values()];
    this.#leases.clear();
    if (this.targetGone?.()) {
      for (const { lease } of leftovers) this.reporter.line(`  · lease ${lease.providerLeaseId}: the emulator has stopped and removed it itself`);
      return;
    }
    for (const { lease, config } of leftovers) {
      const params = { ...this.#base(), config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata };
      const destroy = async () => {
        try {
          return await callOn(await this.#cleanupWorker(), "environmentDestroyLease", params, this.#invocation());
        } catch (error) {
          if (!(error instanceof WorkerGone)) throw error;
          return callOn(await this.#cleanupWorker(true), "environmentDestroyLease", params, this.#invocation());
        }
      };
      await this.reporter
        .step(
          `cleanup: destroy lease ${lease.providerLeaseId}`,
          async () => {
            try {
              await destroy();
              return undefined;
            } catch (error) {
              // The embedded emulator also got the Ctrl-C, and removes its sandboxes on exit.
              if (this.targetGone?.()) return "the emulator has stopped and removed it itself";
              throw error;
            }
          },
          (note) => note,
          { raw: true },
        )
        .catch(() =>
          this.reporter.line(
            this.targetGone?.()
              ? `  · lease ${lease.providerLeaseId}: the emulator has stopped and removed it itself`
              : `  ! lease ${lease.providerLeaseId} may be left behind; remove it by hand`,
          ),
        );
    }
  }
}

/**
 * Installs a SIGINT handler for a run: the first Ctrl-C calls `onInterrupt` (cleanup), a second
 * one `onForce` (exit at once). Returns the function that removes the handler.
 */
export function onCtrlC(onInterrupt, onForce) {
  let count = 0;
  const handler = () => {
    count += 1;
    if (count === 1) onInterrupt();
    else onForce();
  };
  process.on("SIGINT", handler);
  return () => process.off("SIGINT", handler);
}

/** A copy of `config` safe to print: secret fields (apiKey, kubeconfig, tokens…) masked. */
export function maskConfig(config) {
  const secretKey = /^(apikey|kubeconfig)$|key|token|secret|password|credential/i;
  const mask = (value, key) => {
    if (key && secretKey.test(key) && value !== undefined && value !== null && value !== "") {
      return typeof value === "string" ? `${MASK} (${value.length} chars)` : MASK;
    }
    if (Array.isArray(value)) return value.map((item) => mask(item));
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mask(v, k)]));
    return value;
  };
  return mask(config);
}

/** The secret values in a driver config: the API key, the kubeconfig and the credentials inside it. */
export function secretsOf(config) {
  const out = [];
  const visit = (value, key) => {
    if (typeof value === "string" && key && /key|token|secret|password|credential|kubeconfig/i.test(key)) out.push(value);
    else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) visit(v, k);
  };
  visit(config);
  if (typeof config?.kubeconfig === "string") {
    for (const match of config.kubeconfig.matchAll(/^\s*-?\s*(token|password|client-key-data|client-certificate-data|id-token|refresh-token|access-token):\s*["']?([^"'\s]+)/gim)) {
      out.push(match[2]);
    }
  }
  return out;
}
