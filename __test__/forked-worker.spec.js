// The host's way in: fork each plugin's worker as the Paperclip host does and drive it over
// newline-delimited JSON-RPC on stdio.

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { explainError } from "../index.js";
import { ForkedWorker } from "../lib/forked-worker.js";

/** The catalogued refusal of params nested deeper than the bridge carries them. */
const TOO_DEEP = "Hook params are nested too deeply: at most 127 levels of arrays and objects are accepted.";

const providers = [
  {
    plugin: "createos",
    driverKey: "createos",
    health: { status: "ok", message: "CreateOS provider loaded; probe an environment to check connectivity." },
    valid: { apiUrl: "https://api.sb.createos.sh", shape: "s-1vcpu-1gb" },
    invalid: { shape: "s-1vcpu-1gb" },
    invalidErrors: ["CreateOS requires an API URL."],
    supportedMethods: [
      "health",
      "shutdown",
      "environmentValidateConfig",
      "environmentProbe",
      "environmentAcquireLease",
      "environmentResumeLease",
      "environmentReleaseLease",
      "environmentDestroyLease",
      "environmentRealizeWorkspace",
      "environmentExecute",
      "environmentSyncIn",
      "environmentSyncOut",
      "environmentStartInteractiveSetup",
      "environmentGetInteractiveSetup",
      "environmentCancelInteractiveSetup",
      "environmentCaptureTemplate",
      "environmentDeleteTemplate",
      "loginPtyOpen",
      "loginPtyInput",
      "loginPtyStop",
      "loginPtyClose",
      "duplexChannelOpen",
      "duplexChannelWrite",
      "duplexChannelStop",
      "duplexChannelClose",
    ],
    unimplemented: "environmentRunnerIngressEndpoint",
  },
  {
    plugin: "kubernetes",
    driverKey: "kubernetes",
    health: { status: "ok", message: "Kubernetes sandbox provider plugin healthy" },
    valid: { inCluster: true, egressMode: "cilium" },
    invalid: { inCluster: "yes" },
    invalidErrors: ["Expected boolean, received string"],
    supportedMethods: [
      "health",
      "shutdown",
      "environmentValidateConfig",
      "environmentProbe",
      "environmentAcquireLease",
      "environmentResumeLease",
      "environmentReleaseLease",
      "environmentDestroyLease",
      "environmentRealizeWorkspace",
      "environmentExecute",
      "environmentSyncIn",
      "environmentSyncOut",
      "loginPtyOpen",
      "loginPtyInput",
      "loginPtyStop",
      "loginPtyClose",
    ],
    unimplemented: "duplexChannelOpen",
  },
];

describe.each(providers)("forked $plugin worker", (provider) => {
  let worker;

  beforeAll(async () => {
    worker = await ForkedWorker.start(provider.plugin);
  });

  afterAll(() => worker?.kill());

  it("advertises exactly the hooks Rust implements", () => {
    expect(worker.initializeResult.ok).toBe(true);
    expect([...worker.initializeResult.supportedMethods].sort()).toEqual([...provider.supportedMethods].sort());
  });

  it("answers health", async () => {
    expect(await worker.call("health", {})).toEqual(provider.health);
  });

  it("validates a good config and normalises it", async () => {
    const result = await worker.call("environmentValidateConfig", { driverKey: provider.driverKey, config: provider.valid });
    expect(result.ok).toBe(true);
    expect(result.normalizedConfig).toBeTypeOf("object");
  });

  it("rejects a bad config with the original's message", async () => {
    const result = await worker.call("environmentValidateConfig", { driverKey: provider.driverKey, config: provider.invalid });
    expect(result).toEqual({ ok: false, errors: provider.invalidErrors });
  });

  it("refuses deeply nested params with the catalogued message, never an engine or parser internal", async () => {
    const nested = (levels) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
    const paramsText = (levels) =>
      `{"driverKey":${JSON.stringify(provider.driverKey)},"config":${JSON.stringify(provider.valid)},"nested":${nested(levels)}}`;
    // 100,000 levels: deeper than JavaScript's JSON.stringify can go; 1,000 and 127 (128 with
    // the params object): deeper than the JSON parser's limit.
    for (const levels of [100_000, 1_000, 127]) {
      for (const method of ["environmentValidateConfig", "environmentExecute"]) {
        const response = await worker.request(method, undefined, { paramsText: paramsText(levels) });
        expect(response.error?.message, `${method}, ${levels} levels`).toBe(TOO_DEEP);
      }
    }
    expect(explainError(TOO_DEEP)?.code).toBe("CREATEOS_PARAMS_TOO_DEEP");
    // 127 levels with the params object still cross.
    const response = await worker.request("environmentValidateConfig", undefined, { paramsText: paramsText(126) });
    expect(response.result?.ok).toBe(true);
  });

  it("refuses a hook it does not implement the way the SDK does", async () => {
    const response = await worker.request(
      provider.unimplemented,
      { driverKey: provider.driverKey, companyId: "company-1", environmentId: "env-1", config: provider.valid },
      { invocation: { id: "inv-probe", scope: { companyId: "company-1" } } },
    );
    expect(response.error.code).toBe(-32004);
  });

  it("shuts down cleanly and wrote nothing but JSON-RPC to stdout", async () => {
    const { reply, exit } = await worker.shutdown();
    expect(reply.result).toBeNull();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(worker.rpc.lines.length).toBeGreaterThan(0);
    for (const line of worker.rpc.lines) {
      expect(JSON.parse(line).jsonrpc).toBe("2.0");
    }
  });
});
