// Golden vectors for config validation, run through the real plugins: in process through the
// SDK's test harness, and over stdio through a forked worker. The same vectors run as Rust tests
// in the provider crates; PAPERCLIP_GOLDEN_DIR points both at another vector set.

import { createTestHarness } from "@paperclipai/plugin-sdk/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import createosPlugin, { manifest as createosManifest } from "../plugins/createos/dist/index.js";
import kubernetesPlugin, { manifest as kubernetesManifest } from "../plugins/kubernetes/dist/index.js";
import { ForkedWorker } from "../lib/forked-worker.js";
import { loadCases, outcomeOf } from "./support/golden.js";

/** `onEnvironmentValidateConfig` → `environmentValidateConfig`. */
function rpcMethodOf(hook) {
  return hook.charAt(2).toLowerCase() + hook.slice(3);
}

/**
 * The recorded expectation with the later generations the Kubernetes provider adopts applied.
 * The vectors come from 1bbb5810, before G-exec2; G-exec2 gives every execute result
 * `signal: null` (the no-lease-id early return included), right after `exitCode` as on every
 * other execute result. The recorded file stays as recorded; this is its only adjustment (the
 * Rust runner, crates/kubernetes/tests/golden_config.rs, makes the same one).
 */
function withAdoptedGenerations(hook, expected) {
  const returns = expected.returns;
  if (hook !== "onEnvironmentExecute" || !returns || !("exitCode" in returns) || "signal" in returns) {
    return expected;
  }
  const adopted = {};
  for (const [key, value] of Object.entries(returns)) {
    adopted[key] = value;
    if (key === "exitCode") adopted.signal = null;
  }
  return { ...expected, returns: adopted };
}

const suites = [
  {
    name: "createos",
    plugin: createosPlugin,
    manifest: createosManifest,
    // Every CreateOS config case calls onEnvironmentValidateConfig with {driverKey, config}.
    cases: loadCases("createos/config.json").map((c) => ({
      name: c.name,
      hook: "onEnvironmentValidateConfig",
      params: { driverKey: "createos", config: c.input.config },
      expected: c.expected,
    })),
  },
  {
    name: "kubernetes",
    plugin: kubernetesPlugin,
    manifest: kubernetesManifest,
    // Every recorded case stops before any cluster access: invalid configs, early returns.
    cases: loadCases("kubernetes/config.json").map((c) => ({
      name: c.name,
      hook: c.input.hook,
      params: c.input.params,
      expected: withAdoptedGenerations(c.input.hook, c.expected),
    })),
  },
];

describe.each(suites)("$name config vectors", (suite) => {
  it("has cases", () => {
    expect(suite.cases.length).toBeGreaterThan(0);
  });

  describe("through the plugin definition", () => {
    beforeAll(async () => {
      const harness = createTestHarness({ manifest: suite.manifest });
      await suite.plugin.definition.setup(harness.ctx);
    });

    it.each(suite.cases)("$name", async ({ hook, params, expected }) => {
      const actual = await outcomeOf(() => suite.plugin.definition[hook](structuredClone(params)));
      expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
    });
  });

  describe("through a forked worker over stdio", () => {
    let worker;
    beforeAll(async () => {
      worker = await ForkedWorker.start(suite.name);
    });
    afterAll(() => worker?.kill());

    it.each(suite.cases)("$name", async ({ hook, params, expected }) => {
      // The host adds the invocation envelope to every call whose params carry a companyId.
      const invocation = params.companyId ? { id: "inv-golden", scope: { companyId: params.companyId } } : undefined;
      const response = await worker.request(rpcMethodOf(hook), params, { invocation });
      if (expected.throws) {
        expect(response.error?.message).toBe(expected.throws.message);
      } else {
        expect(JSON.stringify(response.result)).toBe(JSON.stringify(expected.returns));
      }
    });
  });
});
