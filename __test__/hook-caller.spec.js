// The one way a hook is called: `provider.hookCaller()`, a plain function made by hand with
// Node-API (src/bridge/caller.rs), `callHook(hook, params, onOutput?)`. It answers the outcome
// object of a synchronous hook at once and a promise of it for every other, throws what reading
// the params throws, keeps its provider alive for as long as it lives, and is driven by the hook
// table's description of each hook (`provider.hooks()`), never by a hook's name.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

import { describe, expect, it } from "vitest";

import * as native from "../index.js";
import { createHostBridge, invoke, nativePluginDefinition } from "../plugin-kit/index.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");

const failureOf = (run) => {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("did not throw");
};

describe("the hook caller", () => {
  for (const name of ["createos", "kubernetes"]) {
    it(`answers outcome objects, at once for a synchronous hook (${name})`, async () => {
      const provider = native.NativeProvider[name]();
      const callHook = provider.hookCaller();
      expect(callHook.name).toBe("callHook");
      const health = callHook("onHealth");
      expect(health).not.toBeInstanceOf(Promise);
      expect(health.value.status).toBe("ok");
      const invalid = callHook("onEnvironmentValidateConfig", { driverKey: "x", config: { apiUrl: 7, kubeconfig: null } });
      expect(Object.keys(invalid)).toEqual(["value"]);
      expect(invalid.value.ok).toBe(false);

      const probe = callHook("onEnvironmentProbe", { driverKey: "x", config: null });
      expect(probe).toBeInstanceOf(Promise);
      expect(Object.keys(await probe)).toEqual(["value"]);

      const unknown = await invoke(() => callHook("onNoSuchHook☃", {})).catch((e) => e);
      expect(unknown.message).toBe("paperclip-sandbox-native internal error: onNoSuchHook☃ has no native implementation");
    });
  }

  it("throws for a hook that is not a string, and what JSON.stringify throws for params JSON cannot carry", () => {
    const callHook = native.NativeProvider.createos().hookCaller();
    expect(failureOf(() => callHook(42, {})).message).toMatch(/string/i);
    const bigint = failureOf(() => callHook("onEnvironmentValidateConfig", { config: { big: 1n } }));
    expect(bigint).toBeInstanceOf(TypeError);
    expect(bigint.message).toBe(failureOf(() => JSON.stringify({ big: 1n })).message);
  });

  it("fails params nested too deeply with the catalogued message, whichever parser ran out", async () => {
    const callHook = native.NativeProvider.kubernetes().hookCaller();
    const nested = (depth) => {
      let params = {};
      for (let i = 0; i < depth; i++) params = { config: params };
      return params;
    };
    for (const depth of [200, 100_000]) {
      const error = await invoke(() => callHook("onEnvironmentValidateConfig", nested(depth))).catch((e) => e);
      expect(error.message, `depth ${depth}`).toBe("Hook params are nested too deeply: at most 127 levels of arrays and objects are accepted.");
    }
  });

  it("is settled by invoke whichever realm made its promise (Jest runs plugins in a VM context)", async () => {
    const foreign = runInNewContext("Promise.resolve({ value: { ok: true } })");
    expect(foreign).not.toBeInstanceOf(Promise);
    await expect(invoke(() => foreign)).resolves.toEqual({ ok: true });
    const failed = runInNewContext("Promise.reject(Object.assign(new Error('boom'), { code: 'GenericFailure' }))");
    const error = await invoke(() => failed).catch((e) => e);
    expect(error.message).toBe("boom");
    expect(error.code).toBeUndefined();
  });

  it("keeps its provider alive while the function lives", async () => {
    // No reference to the providers is left but the callers' own.
    const callers = Array.from({ length: 64 }, (_, i) => (i % 2 ? native.NativeProvider.createos() : native.NativeProvider.kubernetes()).hookCaller());
    for (let round = 0; round < 3; round++) {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (const callHook of callers) expect(callHook("onHealth").value.status).toBe("ok");
  });
});

describe("the hook table's description of each hook", () => {
  it("says which hooks run synchronously, stream output and take params", () => {
    for (const name of ["createos", "kubernetes"]) {
      const hooks = native.NativeProvider[name]().hooks();
      const byName = Object.fromEntries(hooks.map((hook) => [hook.name, hook]));
      expect(byName.onHealth).toEqual({ name: "onHealth", synchronous: true, streamsOutput: false, takesParams: false });
      expect(byName.onEnvironmentValidateConfig).toMatchObject({ synchronous: true, streamsOutput: false, takesParams: true });
      expect(byName.onEnvironmentExecute).toMatchObject({ synchronous: false, streamsOutput: true, takesParams: true });
      const streaming = hooks.filter((hook) => hook.streamsOutput).map((hook) => hook.name);
      expect(streaming, name).toEqual(["onEnvironmentExecute"]);
    }
  });

  it("is all plugin-kit builds a definition from", async () => {
    const seen = [];
    const fake = {
      hooks: () => [
        { name: "onAlpha", synchronous: false, streamsOutput: false, takesParams: true },
        { name: "onBeta", synchronous: false, streamsOutput: true, takesParams: true },
        { name: "onGamma", synchronous: true, streamsOutput: false, takesParams: false },
      ],
      hookCaller: () => (...args) => {
        seen.push(args);
        return { value: args[0] };
      },
      setup: () => ({}),
      shutdown: async () => ({}),
    };
    const definition = nativePluginDefinition(fake, createHostBridge());
    expect(Object.keys(definition).sort()).toEqual(["onAlpha", "onBeta", "onGamma", "onShutdown", "setup"]);
    await expect(definition.onAlpha({ a: 1 })).resolves.toBe("onAlpha");
    await expect(definition.onBeta({ b: 2 })).resolves.toBe("onBeta");
    await expect(definition.onGamma("ignored")).resolves.toBe("onGamma");
    expect(seen[0]).toEqual(["onAlpha", { a: 1 }]);
    expect(seen[1].slice(0, 2)).toEqual(["onBeta", { b: 2 }]);
    expect(typeof seen[1][2]).toBe("function");
    expect(seen[2]).toEqual(["onGamma"]);
  });
});
