// plugin-kit calls every hook but execute through `provider.hookCaller()`: `provider.call` as a
// plain function made by hand with Node-API (src/hook_caller.rs), without napi-rs's per-call
// bookkeeping. It must answer exactly as `call` does, throw as it throws, and keep its provider
// alive for as long as the function itself lives.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

import { describe, expect, it } from "vitest";

import * as native from "../index.js";
import { invoke } from "../plugin-kit/index.js";

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
    it(`answers as call does (${name})`, async () => {
      const provider = native.NativeProvider[name]();
      const callHook = provider.hookCaller();
      expect(callHook.name).toBe("callHook");
      expect(callHook("onHealth")).toEqual(provider.call("onHealth", undefined));
      const invalid = { driverKey: "x", config: { apiUrl: 7, kubeconfig: null } };
      expect(callHook("onEnvironmentValidateConfig", invalid)).toEqual(provider.call("onEnvironmentValidateConfig", invalid));

      const probe = callHook("onEnvironmentProbe", { driverKey: "x", config: null });
      expect(probe).toBeInstanceOf(Promise);
      expect(await probe).toBe(await provider.call("onEnvironmentProbe", { driverKey: "x", config: null }));

      const unknown = await invoke(() => callHook("onNoSuchHook☃", {})).catch((e) => e);
      const unknownByCall = await invoke(() => provider.call("onNoSuchHook☃", {})).catch((e) => e);
      expect(unknown.message).toBe(unknownByCall.message);
      expect(unknown.message).toContain("onNoSuchHook☃");
    });
  }

  it("throws what call throws: a hook that is not a string, params JSON cannot carry", () => {
    const provider = native.NativeProvider.createos();
    const callHook = provider.hookCaller();
    const notString = failureOf(() => callHook(42, {}));
    expect(notString.message).toBe(failureOf(() => provider.call(42, {})).message);
    const bigint = failureOf(() => callHook("onEnvironmentValidateConfig", { config: { big: 1n } }));
    expect(bigint).toBeInstanceOf(TypeError);
    expect(bigint.message).toBe(failureOf(() => provider.call("onEnvironmentValidateConfig", { config: { big: 1n } })).message);
  });

  it("is settled by invoke whichever realm made its promise (Jest runs plugins in a VM context)", async () => {
    const foreign = runInNewContext('Promise.resolve(\'{"value":{"ok":true}}\')');
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
    for (const callHook of callers) expect(JSON.parse(callHook("onHealth")).value.status).toBe("ok");
  });
});
