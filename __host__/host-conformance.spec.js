// Host conformance: both plugins driven through the published Paperclip host's OWN modules
// (@paperclipai/server@2026.916.1) with a real database (the host's embedded Postgres, migrated),
// against the local API emulators. Each step calls the host service a route handler or the
// heartbeat would call, with the arguments it would pass; a failure names the host module and
// step. Rows are seeded directly only where the host has no service for them: the heartbeat run
// (heartbeat_runs), which the host creates deep inside its wakeup scheduler, and, for the seeded
// errors, a lease row without a provider lease id (environment_leases).
//
// Kubernetes native sync (runner.syncIn / runner.syncOut) needs the plugin to record
// `remoteCwd: "/workspace"` on the lease at acquire (G-remoteCwd, see the README's "Kubernetes generations"): the host
// never copies a realized cwd onto the lease. Those steps assert the correct behaviour.

import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { pollUntil } from "../__test__/support/poll.js";
import { repoRoot } from "../scripts/lib/paths.js";
import { startHost, step } from "./support/host.js";

const CREATEOS_KEY = "canary-createos-key-5b0e2c19-never-store-me";
const K8S_TOKEN = "canary-k8s-token-7d41a9e3-never-store-me";
const SESSION_HOME = "/tmp/paperclip-adapter-login/2f8c1a4e-9b3d-4e6f-a1c2-7d8e9f0a1b2c";
// The emulator's pods have no `claude`: its `/bin/sh` installs a stand-in on PATH, then runs the
// command it was given, so every other command runs unchanged.
const FAKE_CLAUDE_SHELL =
  'if [ ! -x /tmp/fakebin/claude ]; then mkdir -p /tmp/fakebin && printf "%s\\n" "#!/bin/sh" "printf \\"ready\\\\n\\"" "read -r line; printf \\"got:%s\\\\n\\" \\"\\$line\\"; exit 7" > /tmp/fakebin/claude && chmod +x /tmp/fakebin/claude; fi; PATH=/tmp/fakebin:$PATH; eval "$2"';

const M = {
  manifest: "services/plugin-manifest-validator.js",
  capability: "services/plugin-capability-validator.js",
  loader: "services/plugin-loader.js",
  bundled: "services/bundled-plugins.js",
  lifecycle: "services/plugin-lifecycle.js",
  workers: "services/plugin-worker-manager.js",
  config: "services/environment-config.js",
  environments: "services/environments.js",
  probe: "services/environment-probe.js",
  orchestrator: "services/environment-run-orchestrator.js",
  target: "services/environment-execution-target.js",
  runtime: "services/environment-runtime.js",
};

let h; // the host
let svc; // host service modules
let createosEmu;
let k8sEmu;
let kubeconfig;
let company;
let agent;
let localEnvironment;
const plugins = {}; // provider -> registry row
const exits = {}; // provider -> worker exit event

beforeAll(async () => {
  h = await startHost();
  svc = {
    manifest: await h.server(M.manifest),
    capability: await h.server(M.capability),
    bundled: await h.server(M.bundled),
    config: await h.server(M.config),
    environments: await h.server(M.environments),
    probe: await h.server(M.probe),
    orchestrator: await h.server(M.orchestrator),
    runtime: await h.server(M.runtime),
    companies: await h.server("services/companies.js"),
    agents: await h.server("services/agents.js"),
    secrets: await h.server("services/secrets.js"),
    projects: await h.server("services/projects.js"),
    executionWorkspaces: await h.server("services/execution-workspaces.js"),
    secretProvider: (await h.server("secrets/configured-provider.js")).getConfiguredSecretProvider(),
  };
  createosEmu = await startEmulator("createos-emulator", ["--api-key", CREATEOS_KEY, "--transition-ms", "20"]);
  k8sEmu = await startEmulator("kubernetes-emulator", [
    "--fast",
    "--token",
    K8S_TOKEN,
    "--command-override",
    `/bin/sh=${JSON.stringify(["/bin/bash", "-c", FAKE_CLAUDE_SHELL, "sh"])}`,
  ]);
  kubeconfig = await readFile(k8sEmu.kubeconfig, "utf8");
  company = await step("services/companies.js create", () => svc.companies.companyService(h.db).create({ name: "Host Suite Co" }));
  agent = await step("services/agents.js create", () =>
    svc.agents.agentService(h.db).create(company.id, { name: "Host Suite Agent", adapterType: "claude_local", adapterConfig: {} }),
  );
  localEnvironment = await step("services/environments.js ensureLocalEnvironment", () =>
    svc.environments.environmentService(h.db).ensureLocalEnvironment(company.id),
  );
}, 240_000);

afterAll(async () => {
  await h?.stop();
  await createosEmu?.stop();
  await k8sEmu?.stop();
});

/**
 * The host's worker manager, observed: every call passes through unchanged; for an
 * `environmentExecute` call, each chunk the manager's execute.log router hands to the call's
 * log sink (it routes by the call's invocation id, and only while the call is live) is recorded
 * with whether the call had replied yet.
 */
const routedExecuteLogs = [];
function observedWorkerManager() {
  return new Proxy(h.workerManager, {
    get(target, prop) {
      if (prop === "call") {
        return (pluginId, method, params, timeoutMs, executeLogSink) => {
          if (method !== "environmentExecute" || !executeLogSink) return target.call(pluginId, method, params, timeoutMs, executeLogSink);
          const state = { replied: false };
          const reply = target.call(pluginId, method, params, timeoutMs, (stream, chunk) => {
            routedExecuteLogs.push({ stream, chunk, afterReply: state.replied });
            return executeLogSink(stream, chunk);
          });
          reply
            .finally(() => {
              state.replied = true;
            })
            .catch(() => {});
          return reply;
        };
      }
      const value = target[prop];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Seeded directly: the host has no service that creates a bare heartbeat run. */
async function seedHeartbeatRun() {
  const [run] = await h.db.insert(h.dbModule.heartbeatRuns).values({ companyId: company.id, agentId: agent.id }).returning();
  return run;
}

async function createosCounts() {
  return (await fetch(`${createosEmu.controlUrl}/counts`)).json();
}

/** Lease-scoped objects left in the tenant namespace and live processes; deletion cascades in the background. */
async function k8sLeftovers() {
  const read = async () => {
    const counts = await (await fetch(`${k8sEmu.controlUrl}/counts`)).json();
    const tenant = counts.namespaces["paperclip-acme"] ?? {};
    const scoped = ["pods", "sandboxes", "jobs", "secrets"].filter((plural) => (tenant[plural] ?? 0) > 0);
    return { scoped, liveProcesses: counts.liveProcesses };
  };
  return pollUntil(read, (last) => last.scoped.length === 0 && last.liveProcesses === 0);
}

async function createosSandboxesSettled() {
  return pollUntil(createosCounts, (counts) => counts.sandboxes === 0 && counts.liveProcesses === 0);
}

const PROVIDERS = {
  createos: {
    packagePath: path.join(repoRoot, "plugins/createos"),
    pluginKey: "paperclip.createos-sandbox-provider",
    secretField: "apiKey",
    secret: CREATEOS_KEY,
    config: () => ({ apiUrl: createosEmu.url, apiKey: CREATEOS_KEY, shape: "s-1vcpu-1gb" }),
    invalid: { config: { shape: "s-1vcpu-1gb" }, error: "CreateOS requires an API URL." },
    probeSummary: "CreateOS sandbox creation and command execution succeeded.",
    leftovers: async () => {
      const counts = await createosSandboxesSettled();
      return { sandboxes: counts.sandboxes, liveProcesses: counts.liveProcesses };
    },
    empty: { sandboxes: 0, liveProcesses: 0 },
  },
  kubernetes: {
    packagePath: path.join(repoRoot, "plugins/kubernetes"),
    pluginKey: "paperclip.kubernetes-sandbox-provider",
    secretField: "kubeconfig",
    secret: K8S_TOKEN,
    config: () => ({ kubeconfig: kubeconfig, companySlug: "acme", egressMode: "cilium" }),
    invalid: { config: { kubeconfig: "" }, error: "kubernetes provider requires one of `inCluster` or `kubeconfig`" },
    probeSummary: "Kubernetes cluster reachable. Tenant namespace: paperclip-acme.",
    leftovers: k8sLeftovers,
    empty: { scoped: [], liveProcesses: 0 },
  },
};

describe("install and start through the host's loader", () => {
  it("validates both manifests with the host's manifest and capability validators", async () => {
    for (const [provider, p] of Object.entries(PROVIDERS)) {
      const manifest = (await import(path.join(p.packagePath, "dist/manifest.js"))).default;
      const parsed = await step(`${M.manifest} parse (${provider})`, () => svc.manifest.pluginManifestValidator().parse(manifest));
      expect(parsed, `${M.manifest} parse (${provider})`).toMatchObject({ success: true });
      const caps = await step(`${M.capability} validateManifestCapabilities (${provider})`, () =>
        svc.capability.pluginCapabilityValidator().validateManifestCapabilities(parsed.manifest),
      );
      expect(caps, `${M.capability} validateManifestCapabilities (${provider})`).toMatchObject({ allowed: true });
    }
  });

  it("installs CreateOS by local path (loader.installPlugin) and Kubernetes through the bundled catalog (PAPERCLIP_KUBERNETES_PLUGIN_PATH)", async () => {
    await step(`${M.loader} installPlugin({localPath}) (createos)`, () => h.loader.installPlugin({ localPath: PROVIDERS.createos.packagePath }));
    const createos = await h.registry.getByKey(PROVIDERS.createos.pluginKey);
    expect(createos, `${M.loader} installPlugin: registry row`).toMatchObject({ pluginKey: PROVIDERS.createos.pluginKey, packagePath: PROVIDERS.createos.packagePath });
    await step(`${M.lifecycle} load (createos)`, () => h.lifecycle.load(createos.id));

    const installs = await step(`${M.bundled} resolveBundledPluginInstalls`, () =>
      svc.bundled.resolveBundledPluginInstalls(svc.bundled.SELF_HOSTED_AUTO_INSTALL_KEYS, {
        catalogRoot: path.join(h.host.dir, "no-bundled-catalog"),
        enforceCatalogRoot: false,
        env: { PAPERCLIP_KUBERNETES_PLUGIN_PATH: PROVIDERS.kubernetes.packagePath },
      }),
    );
    expect(installs, `${M.bundled} resolveBundledPluginInstalls`).toEqual([
      { key: "kubernetes", pluginKey: PROVIDERS.kubernetes.pluginKey, localPath: PROVIDERS.kubernetes.packagePath },
    ]);
    // ensureBundledPlugins swallows failures (the server always boots), so the registry row is the proof.
    await step(`${M.bundled} ensureBundledPlugins`, () =>
      svc.bundled.ensureBundledPlugins(installs, { registry: h.registry, loader: h.loader, lifecycle: h.lifecycle, logger: h.logger }, { reinstallUninstalled: false }),
    );
    const kubernetes = await h.registry.getByKey(PROVIDERS.kubernetes.pluginKey);
    expect(kubernetes, `${M.bundled} ensureBundledPlugins: registry row`).toMatchObject({ status: "ready", packagePath: PROVIDERS.kubernetes.packagePath });
  });

  it("starts both workers (loader.loadAll through the worker manager)", async () => {
    const result = await step(`${M.loader} loadAll`, () => h.loader.loadAll());
    for (const [provider, p] of Object.entries(PROVIDERS)) {
      const row = await h.registry.getByKey(p.pluginKey);
      plugins[provider] = row;
      const loaded = result.results.find((r) => r.plugin?.id === row.id);
      expect(loaded?.success, `${M.loader} loadAll (${provider}): ${loaded?.error ?? ""}`).toBe(true);
      expect(h.workerManager.isRunning(row.id), `${M.workers} isRunning (${provider})`).toBe(true);
      const handle = h.workerManager.getWorker(row.id);
      handle.on("exit", (event) => {
        exits[provider] = event;
      });
      expect(handle.supportedMethods, `${M.workers} supportedMethods (${provider})`).toEqual(
        expect.arrayContaining(["environmentValidateConfig", "environmentProbe", "environmentAcquireLease", "environmentExecute", "environmentSyncIn", "environmentSyncOut", "loginPtyOpen"]),
      );
    }
  });
});

describe.each(Object.keys(PROVIDERS))("%s through the host", (provider) => {
  const p = PROVIDERS[provider];
  let environment;
  let run;
  let acquired;
  let realized;
  const hostDirs = [];

  afterAll(async () => {
    for (const dir of hostDirs) await rm(dir, { recursive: true, force: true });
  });

  async function hostDir(prefix) {
    const dir = await mkdtemp(path.join(tmpdir(), `host-suite-${provider}-${prefix}-`));
    hostDirs.push(dir);
    return dir;
  }

  it("worker manager: validate calls return the provider's exact errors, and the host's normalization rejects with the same text", async () => {
    const result = await step(`${M.workers} call environmentValidateConfig`, () =>
      h.workerManager.call(plugins[provider].id, "environmentValidateConfig", { driverKey: provider, config: p.invalid.config }),
    );
    expect(result, `${M.workers} call environmentValidateConfig`).toEqual({ ok: false, errors: [p.invalid.error] });
    await expect(
      svc.config.normalizeEnvironmentConfigForPersistence({
        db: h.db,
        companyId: company.id,
        environmentName: `${provider} invalid`,
        driver: "sandbox",
        config: { provider, ...p.invalid.config },
        actor: { agentId: null, userId: null },
        pluginWorkerManager: h.workerManager,
      }),
      `${M.config} normalizeEnvironmentConfigForPersistence (invalid config)`,
    ).rejects.toThrow(p.invalid.error);
  });

  it("environment config: normalization for persistence moves the secret into a company secret; the environment is saved", async () => {
    const config = await step(`${M.config} normalizeEnvironmentConfigForPersistence`, () =>
      svc.config.normalizeEnvironmentConfigForPersistence({
        db: h.db,
        companyId: company.id,
        environmentName: `${provider} env`,
        driver: "sandbox",
        secretProvider: svc.secretProvider,
        config: { provider, ...p.config() },
        actor: { agentId: null, userId: null },
        pluginWorkerManager: h.workerManager,
      }),
    );
    expect(config.provider, `${M.config} normalizeEnvironmentConfigForPersistence`).toBe(provider);
    expect(JSON.stringify(config), `${M.config} normalizeEnvironmentConfigForPersistence: secret left in config`).not.toContain(p.secret);
    expect(config[p.secretField], `${M.config} normalizeEnvironmentConfigForPersistence: secret ref`).toBeTruthy();

    environment = await step(`${M.environments} create`, () =>
      h.db.transaction(async (tx) => {
        const created = await svc.environments.environmentService(h.db).create({ name: `${provider} env`, driver: "sandbox", config }, undefined, { db: tx });
        const refs = await svc.config.collectEnvironmentSecretRefs({ db: h.db, environment: created });
        await svc.secrets.secretService(h.db).replaceSecretRefsForInstanceTarget({ targetType: "environment", targetId: created.id }, refs, { db: tx });
        return created;
      }),
    );
    expect(environment.status).toBe("active");
  });

  it("probeEnvironment: a draft probe calls the plugin's probe; a saved probe acquires and releases a lease", async () => {
    const draftConfig = await step(`${M.config} normalizeEnvironmentConfigForProbe`, () =>
      svc.config.normalizeEnvironmentConfigForProbe({
        db: h.db,
        companyId: company.id,
        driver: "sandbox",
        config: { provider, ...p.config() },
        accessContext: { actorType: "user", actorId: "host-suite", actorSource: "session", heartbeatRunId: null },
        pluginWorkerManager: h.workerManager,
      }),
    );
    const draft = { id: "unsaved", companyId: company.id, name: "Unsaved environment", description: null, driver: "sandbox", status: "active", config: draftConfig, envVars: {}, metadata: null, createdAt: new Date(), updatedAt: new Date() };
    const draftProbe = await step(`${M.probe} probeEnvironment (draft)`, () =>
      svc.probe.probeEnvironment(h.db, draft, { companyId: company.id, pluginWorkerManager: h.workerManager, resolvedConfig: { driver: "sandbox", config: draftConfig } }),
    );
    // The provider's summary line first (the Kubernetes probe adds one line per check after it).
    const firstLine = (summary) => String(summary ?? "").split("\n")[0];
    expect(draftProbe, `${M.probe} probeEnvironment (draft)`).toMatchObject({ ok: true });
    expect(firstLine(draftProbe.summary), `${M.probe} probeEnvironment (draft)`).toBe(p.probeSummary);

    const savedProbe = await step(`${M.probe} probeEnvironment (saved)`, () =>
      svc.probe.probeEnvironment(h.db, environment, {
        companyId: company.id,
        pluginWorkerManager: h.workerManager,
        applyCustomImageTemplate: true,
        acquireSandboxRuntimeLease: true,
      }),
    );
    expect(savedProbe, `${M.probe} probeEnvironment (saved)`).toMatchObject({ ok: true });
  });

  it("run orchestrator: acquireForRun stores a lease with no plaintext secret", async () => {
    run = await seedHeartbeatRun();
    const orchestrator = svc.orchestrator.environmentRunOrchestrator(h.db, { pluginWorkerManager: h.workerManager });
    acquired = await step(`${M.orchestrator} acquireForRun`, () =>
      orchestrator.acquireForRun({
        companyId: company.id,
        selectedEnvironmentId: environment.id,
        localEnvironmentId: localEnvironment.id,
        adapterType: "claude_local",
        issueId: null,
        heartbeatRunId: run.id,
        agentId: agent.id,
        persistedExecutionWorkspace: null,
        executionWorkspaceSettings: null,
      }),
    );
    expect(acquired.lease, `${M.orchestrator} acquireForRun`).toMatchObject({ status: "active", provider });
    expect(acquired.lease.providerLeaseId, `${M.orchestrator} acquireForRun: providerLeaseId`).toMatch(/\S/);
    const rows = await h.db.select().from(h.dbModule.environmentLeases);
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows.map((r) => r.metadata)), "environment_leases.metadata holds a plaintext secret").not.toContain(p.secret);
    const envRows = await h.db.select().from(h.dbModule.environments);
    expect(JSON.stringify(envRows.map((r) => r.config)), "environments.config holds a plaintext secret").not.toContain(p.secret);
  });

  it("run orchestrator: realizeForRun gives an execution target with a runner", async () => {
    const orchestrator = svc.orchestrator.environmentRunOrchestrator(h.db, { pluginWorkerManager: observedWorkerManager() });
    const workspaceDir = await hostDir("workspace");
    realized = await step(`${M.orchestrator} realizeForRun`, () =>
      orchestrator.realizeForRun({
        environment: acquired.environment,
        lease: acquired.lease,
        adapterType: "claude_local",
        companyId: company.id,
        issueId: null,
        heartbeatRunId: run.id,
        executionWorkspace: { cwd: workspaceDir, source: "project_primary", projectId: null, workspaceId: null, repoUrl: null, repoRef: null },
        effectiveExecutionWorkspaceMode: "isolated",
        persistedExecutionWorkspace: null,
      }),
    );
    const target = realized.executionTarget;
    expect(target, `${M.orchestrator} realizeForRun: execution target`).toMatchObject({ kind: "remote", transport: "sandbox", providerKey: provider });
    expect(typeof target.runner?.execute, `${M.target} runner.execute`).toBe("function");
    expect(typeof target.runner?.syncIn, `${M.target} runner.syncIn (native sync offered)`).toBe("function");
    expect(typeof target.runner?.syncOut, `${M.target} runner.syncOut (native sync offered)`).toBe("function");
  });

  it("execution target: runner.execute streams every execute.log chunk to the host's handler before the reply", async () => {
    const runner = realized.executionTarget.runner;
    const seen = [];
    routedExecuteLogs.length = 0;
    const result = await step(`${M.target} runner.execute`, () =>
      runner.execute({
        command: "sh",
        args: ["-c", 'echo "one $WHO"; echo warn >&2; echo two; exit 3'],
        env: { WHO: "host" },
        timeoutMs: 30_000,
        onLog: (stream, chunk) => {
          seen.push({ stream, chunk });
        },
      }),
    );
    expect(result, `${M.target} runner.execute`).toMatchObject({ exitCode: 3, timedOut: false, stdout: "one host\ntwo\n", stderr: "warn\n" });
    // The runner appends, after the reply, whatever its sink did not get live; so the live
    // routed chunks alone must make up the whole output, and none may come after the reply.
    const joined = (list, stream) => list.filter((d) => d.stream === stream).map((d) => d.chunk).join("");
    expect(routedExecuteLogs.filter((d) => d.afterReply), `${M.workers} execute.log routing: chunks after the reply`).toEqual([]);
    expect(joined(routedExecuteLogs, "stdout"), `${M.workers} execute.log routing by invocation id (stdout)`).toBe(result.stdout);
    expect(joined(routedExecuteLogs, "stderr"), `${M.workers} execute.log routing by invocation id (stderr)`).toBe(result.stderr);
    expect(joined(seen, "stdout") + joined(seen, "stderr"), `${M.target} runner.execute onLog`).toBe(result.stdout + result.stderr);
  });

  it("worker manager: a direct environmentExecute call with an execution-log sink gets every chunk before the reply", async () => {
    const lease = acquired.lease;
    const chunks = [];
    let settled = false;
    const afterReply = [];
    const config = (await svc.config.resolveEnvironmentDriverConfigForRuntime(h.db, company.id, environment)).config;
    const { provider: _drop, ...driverConfig } = config;
    const result = await step(`${M.workers} call environmentExecute (execution-log sink)`, () =>
      h.workerManager
        .call(
          plugins[provider].id,
          "environmentExecute",
          {
            driverKey: provider,
            companyId: company.id,
            environmentId: environment.id,
            config: driverConfig,
            lease: { providerLeaseId: lease.providerLeaseId, metadata: lease.metadata, expiresAt: null },
            command: "sh",
            args: ["-c", "for i in 1 2 3; do echo line-$i; done"],
            cwd: realized.executionTarget.remoteCwd,
            timeoutMs: 30_000,
          },
          60_000,
          (stream, chunk) => (settled ? afterReply : chunks).push({ stream, chunk }),
        )
        .finally(() => {
          settled = true;
        }),
    );
    expect(result, `${M.workers} call environmentExecute`).toMatchObject({ exitCode: 0, stdout: "line-1\nline-2\nline-3\n" });
    expect(chunks.map((c) => c.chunk).join(""), `${M.workers} execute.log sink`).toBe(result.stdout);
    expect(afterReply, `${M.workers} execute.log after the reply`).toEqual([]);
  });

  it("execution target: runner.syncIn puts host files in the sandbox, runner.syncOut brings sandbox files back", async () => {
    const runner = realized.executionTarget.runner;
    const remoteCwd = realized.executionTarget.remoteCwd;
    const local = await hostDir("sync");
    await mkdir(path.join(local, "in/src"), { recursive: true });
    await writeFile(path.join(local, "in/src/hello.txt"), `hello from the host (${provider})\n`);
    await writeFile(path.join(local, "in/notes.md"), "# notes\n");
    const remote = `${remoteCwd}/host-suite`;
    const syncedIn = await step(`${M.target} runner.syncIn`, () =>
      runner.syncIn([{ operationId: "in-1", files: [{ sourcePath: path.join(local, "in"), targetPath: remote, kind: "directory" }] }]),
    );
    expect(syncedIn.operations?.[0], `${M.target} runner.syncIn`).toMatchObject({ operationId: "in-1", filesTransferred: 2 });
    const catted = await step(`${M.target} runner.execute (read the synced file)`, () =>
      // No cwd given: the runner runs it in the lease's remote dir, which the plugin must honour.
      runner.execute({ command: "sh", args: ["-c", "pwd; cat host-suite/src/hello.txt; tr a-z A-Z < host-suite/src/hello.txt > host-suite/out.txt"], timeoutMs: 30_000 }),
    );
    expect(catted, `${M.target} runner.execute in the synced workspace`).toMatchObject({ exitCode: 0, stdout: `${remoteCwd}\nhello from the host (${provider})\n` });
    const syncedOut = await step(`${M.target} runner.syncOut`, () =>
      runner.syncOut([{ operationId: "out-1", files: [{ sourcePath: `${remote}/out.txt`, targetPath: path.join(local, "back/out.txt"), kind: "file" }] }]),
    );
    expect(syncedOut.operations?.[0], `${M.target} runner.syncOut`).toMatchObject({ operationId: "out-1", filesTransferred: 1 });
    expect(await readFile(path.join(local, "back/out.txt"), "utf8"), `${M.target} runner.syncOut: file contents`).toBe(`HELLO FROM THE HOST (${provider.toUpperCase()})\n`);
  });

  it("worker manager: opens a login PTY on the lease (output, input, exit)", async () => {
    if (provider === "createos") {
      // The CreateOS sandbox has no `claude`: put a stand-in on the login shell's PATH.
      const fake = '#!/bin/bash\necho "login for $1"\nread -r line\necho "got:$line"\nexit 5\n';
      const setup = await realized.executionTarget.runner.execute({
        command: "bash",
        args: ["-c", `mkdir -p /root/bin && printf '%s' '${fake}' > /root/bin/claude && chmod +x /root/bin/claude && echo 'PATH=/root/bin:$PATH' > /root/.bash_profile`],
        timeoutMs: 30_000,
      });
      expect(setup.exitCode).toBe(0);
    }
    const session = await step(`${M.workers} openLoginPtySession`, () =>
      h.workerManager.openLoginPtySession(plugins[provider].id, {
        driverKey: provider,
        companyId: company.id,
        environmentId: environment.id,
        providerLeaseId: acquired.lease.providerLeaseId,
        loginCommandKey: "claude",
        sessionHome: SESSION_HOME,
      }),
    );
    let output = "";
    let sawPrompt;
    const prompt = new Promise((resolve) => {
      sawPrompt = resolve;
    });
    session.onData((chunk) => {
      output += chunk;
      if (/ready|login for/.test(output)) sawPrompt();
    });
    await prompt;
    session.write("hello host\r");
    const exit = await step(`${M.workers} login PTY wait`, () => session.wait());
    expect(output, `${M.workers} login PTY output`).toContain("got:hello host");
    expect(exit.exitCode, `${M.workers} login PTY exit code`).toBe(provider === "createos" ? 5 : 7);
    await step(`${M.workers} login PTY close`, () => session.close());
  });

  it("run orchestrator: releaseForRun releases the lease and leaves the emulator empty", async () => {
    const orchestrator = svc.orchestrator.environmentRunOrchestrator(h.db, { pluginWorkerManager: h.workerManager });
    const released = await step(`${M.orchestrator} releaseForRun`, () => orchestrator.releaseForRun({ heartbeatRunId: run.id, companyId: company.id, agentId: agent.id }));
    expect(released.errors, `${M.orchestrator} releaseForRun errors`).toEqual([]);
    expect(released.released.map((r) => r.lease.status), `${M.orchestrator} releaseForRun`).toEqual(["released"]);
    expect(await p.leftovers(), `${M.orchestrator} releaseForRun: emulator not empty`).toEqual(p.empty);
  });

  it("environment runtime: a fresh lease is destroyed (destroyRunLease) and the emulator is empty", async () => {
    const destroyRun = await seedHeartbeatRun();
    const runtime = svc.runtime.environmentRuntimeService(h.db, { pluginWorkerManager: h.workerManager });
    const record = await step(`${M.runtime} acquireRunLease`, () =>
      runtime.acquireRunLease({ companyId: company.id, environment, issueId: null, agentId: agent.id, heartbeatRunId: destroyRun.id, persistedExecutionWorkspace: null, executionWorkspaceSettings: null, adapterType: "claude_local" }),
    );
    const destroyed = await step(`${M.runtime} destroyRunLease`, () => runtime.destroyRunLease({ environment, lease: record.lease }));
    expect(destroyed?.status, `${M.runtime} destroyRunLease`).toBe("expired");
    expect(destroyed?.releasedAt, `${M.runtime} destroyRunLease: releasedAt`).toBeTruthy();
    expect(await p.leftovers(), `${M.runtime} destroyRunLease: emulator not empty`).toEqual(p.empty);
  });
});

describe("CreateOS reusable lease through the host: release retains, the next run resumes, destroy removes", () => {
  it("acquireForRun -> releaseForRun keeps the sandbox; the next acquireForRun resumes it; destroyRunLease leaves the emulator empty", async () => {
    const config = await step(`${M.config} normalizeEnvironmentConfigForPersistence (reuseLease)`, () =>
      svc.config.normalizeEnvironmentConfigForPersistence({
        db: h.db,
        companyId: company.id,
        environmentName: "createos warm",
        driver: "sandbox",
        secretProvider: svc.secretProvider,
        config: { provider: "createos", ...PROVIDERS.createos.config(), reuseLease: true },
        actor: { agentId: null, userId: null },
        pluginWorkerManager: h.workerManager,
      }),
    );
    const environment = await step(`${M.environments} create (reuseLease)`, () =>
      h.db.transaction(async (tx) => {
        const created = await svc.environments.environmentService(h.db).create({ name: "createos warm", driver: "sandbox", config }, undefined, { db: tx });
        const refs = await svc.config.collectEnvironmentSecretRefs({ db: h.db, environment: created });
        await svc.secrets.secretService(h.db).replaceSecretRefsForInstanceTarget({ targetType: "environment", targetId: created.id }, refs, { db: tx });
        return created;
      }),
    );
    // A reusable lease is scoped to an execution workspace, which belongs to a project.
    const project = await step("services/projects.js create", () => svc.projects.projectService(h.db).create(company.id, { name: "Host Suite Project" }));
    const workspace = await step("services/execution-workspaces.js create", () =>
      svc.executionWorkspaces.executionWorkspaceService(h.db).create({ companyId: company.id, projectId: project.id, mode: "isolated", strategyType: "project_primary", name: "host-suite-ws" }),
    );
    const orchestrator = svc.orchestrator.environmentRunOrchestrator(h.db, { pluginWorkerManager: h.workerManager });
    const acquire = (runId) =>
      orchestrator.acquireForRun({
        companyId: company.id,
        selectedEnvironmentId: environment.id,
        localEnvironmentId: localEnvironment.id,
        adapterType: "claude_local",
        issueId: null,
        heartbeatRunId: runId,
        agentId: agent.id,
        persistedExecutionWorkspace: workspace,
        executionWorkspaceSettings: null,
      });
    const runA = await seedHeartbeatRun();
    const first = await step(`${M.orchestrator} acquireForRun (run A)`, () => acquire(runA.id));
    expect(first.lease.leasePolicy, `${M.orchestrator} acquireForRun (run A): lease policy`).toBe("reuse_by_environment");
    const releasedA = await step(`${M.orchestrator} releaseForRun (run A)`, () => orchestrator.releaseForRun({ heartbeatRunId: runA.id, companyId: company.id, agentId: agent.id }));
    expect(releasedA.errors, `${M.orchestrator} releaseForRun (run A) errors`).toEqual([]);
    expect((await createosCounts()).sandboxes, `${M.orchestrator} releaseForRun (run A): the warm sandbox is kept`).toBe(1);

    const before = (await (await fetch(`${createosEmu.controlUrl}/requests`)).json()).requests.length;
    const runB = await seedHeartbeatRun();
    const second = await step(`${M.orchestrator} acquireForRun (run B, resume)`, () => acquire(runB.id));
    expect(second.lease.providerLeaseId, `${M.orchestrator} acquireForRun (run B): resumed the same sandbox`).toBe(first.lease.providerLeaseId);
    const created = (await (await fetch(`${createosEmu.controlUrl}/requests`)).json()).requests
      .slice(before)
      .filter((r) => r.method === "POST" && r.path === "/v1/sandboxes");
    expect(created, `${M.orchestrator} acquireForRun (run B): created a new sandbox instead of resuming`).toEqual([]);

    const runtime = svc.runtime.environmentRuntimeService(h.db, { pluginWorkerManager: h.workerManager });
    await step(`${M.runtime} destroyRunLease (resumed lease)`, () => runtime.destroyRunLease({ environment, lease: second.lease }));
    expect(await PROVIDERS.createos.leftovers(), `${M.runtime} destroyRunLease: emulator not empty`).toEqual(PROVIDERS.createos.empty);
  });
});

describe("seeded errors reach the host verbatim", () => {
  // A host lease row whose providerLeaseId is null (seeded: the host writes no such row itself),
  // carrying the metadata the host stored on this provider's real lease, handed to the host's
  // own runtime calls.
  async function seededLease(provider) {
    const [environment] = (await h.db.select().from(h.dbModule.environments)).filter((e) => e.config?.provider === provider);
    const [real] = (await h.db.select().from(h.dbModule.environmentLeases)).filter((l) => l.provider === provider && l.providerLeaseId);
    expect(real?.metadata?.sandboxProviderPlugin, `no real ${provider} lease to copy host metadata from`).toBeTruthy();
    const run = await seedHeartbeatRun();
    const [lease] = await h.db
      .insert(h.dbModule.environmentLeases)
      .values({ companyId: company.id, environmentId: environment.id, heartbeatRunId: run.id, status: "active", provider, providerLeaseId: null, metadata: real.metadata })
      .returning();
    return { environment, lease };
  }

  it("CreateOS: realize with a null providerLeaseId", async () => {
    const { environment, lease } = await seededLease("createos");
    const runtime = svc.runtime.environmentRuntimeService(h.db, { pluginWorkerManager: h.workerManager });
    await expect(
      runtime.realizeWorkspace({ environment, lease, workspace: { localPath: tmpdir(), mode: "isolated" } }),
      `${M.runtime} realizeWorkspace`,
    ).rejects.toThrow("CreateOS workspace requires a lease from this environment.");
  });

  it("Kubernetes: sync on a host lease without a provider lease ID", async () => {
    const { environment, lease } = await seededLease("kubernetes");
    const runtime = svc.runtime.environmentRuntimeService(h.db, { pluginWorkerManager: h.workerManager });
    const local = await mkdtemp(path.join(tmpdir(), "host-suite-seeded-"));
    await writeFile(path.join(local, "a.txt"), "a\n");
    try {
      await expect(
        runtime.syncIn({ environment, lease, operations: [{ operationId: "seeded", files: [{ sourcePath: path.join(local, "a.txt"), targetPath: "/workspace/a.txt", kind: "file" }] }] }),
        `${M.runtime} syncIn`,
      ).rejects.toThrow("Kubernetes file sync requires a provider lease ID.");
    } finally {
      await rm(local, { recursive: true, force: true });
    }
  });
});

describe("shutdown", () => {
  it("the host's shutdown (loader.shutdownAll -> workerManager.stopAll) ends both workers and each exits 0", async () => {
    await step(`${M.loader} shutdownAll`, () => h.loader.shutdownAll());
    for (const provider of Object.keys(PROVIDERS)) {
      expect(exits[provider], `${M.loader} shutdownAll: ${provider} worker exit`).toEqual({ pluginId: plugins[provider].id, code: 0, signal: null });
    }
  });
});
