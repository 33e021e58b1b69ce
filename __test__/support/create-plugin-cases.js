// `createPlugin()` as Paperclip's own tests use it: `createPlugin().definition`, hooks called
// directly with a hand-made ctx (no SDK harness, no RPC host). Shared by the vitest suite
// (__test__/create-plugin.spec.js) and the Jest suite (__jest__/create-plugin.test.js), which pass
// in their own `describe`/`it`/`expect` and hooks.

import { readFile } from "node:fs/promises";

import { startEmulator } from "../../lib/emulators.js";
import { createPlugin as createCreateOs } from "../../plugins/createos/dist/index.js";
import { createPlugin as createKubernetes } from "../../plugins/kubernetes/dist/plugin.js";

/** The hand-made ctx of the original tests: spies for logger, execution.log, loginPty, duplexChannel. */
export function handMadeCtx() {
  const calls = { log: [], execution: [], loginPty: [], duplexChannel: [] };
  const spy = (list, name) => (...args) => list.push([name, ...args]);
  return {
    calls,
    ctx: {
      logger: { info: spy(calls.log, "info"), warn: spy(calls.log, "warn"), error: spy(calls.log, "error"), debug: spy(calls.log, "debug") },
      execution: { log: spy(calls.execution, "log") },
      loginPty: { output: spy(calls.loginPty, "output"), exit: spy(calls.loginPty, "exit") },
      duplexChannel: { data: spy(calls.duplexChannel, "data"), exit: spy(calls.duplexChannel, "exit") },
    },
  };
}

export function createPluginCases({ describe, it, expect, beforeAll, afterAll }) {
  describe("createPlugin() with a hand-made ctx", () => {
    let emulator;
    let kubernetesEmulator;
    let config;
    let kubernetesConfig;
    const base = { driverKey: "createos", companyId: "company-1", environmentId: "env-1" };

    beforeAll(async () => {
      emulator = await startEmulator("createos-emulator", ["--transition-ms", "20"]);
      config = { apiUrl: emulator.url, apiKey: emulator.apiKey, shape: "s-1vcpu-1gb" };
      kubernetesEmulator = await startEmulator("kubernetes-emulator", ["--fast"]);
      kubernetesConfig = { kubeconfig: await readFile(kubernetesEmulator.kubeconfig, "utf8"), companySlug: "acme" };
    });
    afterAll(async () => {
      await emulator?.stop();
      await kubernetesEmulator?.stop();
    });

    it("validates config on a fresh Kubernetes and CreateOS plugin", async () => {
      const kubernetes = createKubernetes().definition;
      expect(await kubernetes.onEnvironmentValidateConfig({ driverKey: "kubernetes", config: { inCluster: "yes" } })).toEqual({
        ok: false,
        errors: ["Expected boolean, received string"],
      });
      const createos = createCreateOs().definition;
      expect(await createos.onEnvironmentValidateConfig({ driverKey: "createos", config: { shape: "s-1vcpu-1gb" } })).toEqual({
        ok: false,
        errors: ["CreateOS requires an API URL."],
      });
    });

    it("executes with output streamed to the hand-made ctx", async () => {
      const { ctx, calls } = handMadeCtx();
      const plugin = createCreateOs().definition;
      await plugin.setup(ctx);
      const lease = await plugin.onEnvironmentAcquireLease({ ...base, config, runId: "run-1" });
      try {
        const result = await plugin.onEnvironmentExecute({
          ...base,
          config,
          lease,
          command: "sh",
          args: ["-c", "echo out-line; echo err-line >&2"],
          cwd: "/paperclip-workspace",
        });
        expect(result).toMatchObject({ exitCode: 0, timedOut: false });
        expect(result.stdout).toContain("out-line");
        const streamed = (stream) => calls.execution.filter(([, s]) => s === stream).map(([, , chunk]) => chunk).join("");
        expect(streamed("stdout")).toContain("out-line");
        expect(streamed("stderr")).toContain("err-line");
      } finally {
        await plugin.onEnvironmentDestroyLease({ ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata });
        await plugin.onShutdown();
      }
    });

    it("executes on Kubernetes with output streamed to the hand-made ctx", async () => {
      const { ctx, calls } = handMadeCtx();
      const plugin = createKubernetes().definition;
      const k8s = { ...base, driverKey: "kubernetes", config: kubernetesConfig };
      await plugin.setup(ctx);
      const lease = await plugin.onEnvironmentAcquireLease({ ...k8s, runId: "run-k8s" });
      try {
        const result = await plugin.onEnvironmentExecute({
          ...k8s,
          lease,
          command: "sh",
          args: ["-c", "pwd; echo err-line >&2"],
          cwd: "/workspace",
          timeoutMs: 30_000,
        });
        expect(result).toMatchObject({ exitCode: 0, timedOut: false, signal: null, stdout: "/workspace\n" });
        const streamed = (stream) => calls.execution.filter(([, s]) => s === stream).map(([, , chunk]) => chunk).join("");
        expect(streamed("stdout")).toBe("/workspace\n");
        expect(streamed("stderr")).toContain("err-line");
      } finally {
        await plugin.onEnvironmentDestroyLease({ ...k8s, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata });
        await plugin.onShutdown();
      }
    });

    it("gives every instance its own leases", async () => {
      const first = createCreateOs().definition;
      const second = createCreateOs().definition;
      await first.setup(handMadeCtx().ctx);
      await second.setup(handMadeCtx().ctx);
      const lease = await first.onEnvironmentAcquireLease({ ...base, config, runId: "run-2" });
      try {
        const open = (plugin, hostRouteId) =>
          plugin.onDuplexChannelOpen({ ...base, hostRouteId, providerLeaseId: lease.providerLeaseId, command: ["cat"] });
        // The second instance never acquired the lease: it is not in its state.
        await expect(open(second, "route-second")).rejects.toThrow("CreateOS session requires a lease cached for this environment.");
        const opened = await open(first, "route-first");
        expect(opened).toEqual({ hostRouteId: "route-first", workerSessionId: expect.any(String) });
        await first.onDuplexChannelClose({ hostRouteId: "route-first", workerSessionId: opened.workerSessionId });
      } finally {
        await first.onEnvironmentDestroyLease({ ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata });
        await first.onShutdown();
        await second.onShutdown();
      }
    });
  });
}
