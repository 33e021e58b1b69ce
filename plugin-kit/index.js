// The thin facade every plugin worker shares: load the addon, bridge `ctx` into Rust, and turn
// native outcomes into plain `Error`s with the exact catalogued message. No provider logic lives
// here; anything that decides something belongs in the Rust crates.

import { AsyncResource } from "node:async_hooks";


/**
 * Loads the native addon, with a message that says what to do when it was never built
 * (napi-rs' default blames npm's optional dependencies, which is misleading for a source build).
 */
export async function loadNative() {
  try {
    return await import("paperclip-sandbox-native");
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    if (detail.includes("Cannot find native binding")) {
      throw new Error(
        "paperclip-sandbox-native: the native addon is not built; run `npm install` or `npm run build` " +
          "in the paperclip-sandbox-native package (needs Rust >= 1.88 and cargo).",
        { cause },
      );
    }
    throw cause;
  }
}

/** Turns a native failure description into the Error the original plugin would have thrown. */
function errorFromNative({ message, name, code }) {
  const error = new Error(message);
  if (name && name !== "Error") {
    Object.defineProperty(error, "name", { value: name, configurable: true, writable: true });
  }
  if (typeof code === "number") error.code = code;
  return error;
}

/**
 * napi-rs rejects with an Error carrying an enumerable string `code` ("GenericFailure"): noise to
 * the host and to users comparing errors. Keep the message, drop the code.
 */
function plainError(error) {
  if (!(error instanceof Error)) return new Error(String(error));
  if (typeof error.code === "string") return new Error(error.message);
  return error;
}

/**
 * Unwraps a native outcome, `{value?, error?}`: its value, or a throw of its error. The addon
 * returns it as JSON text (V8 parses that far faster than napi builds objects), or, for an
 * execute result carrying a large output, as the object itself (see src/outcome.rs).
 */
export function settle(outcome) {
  const { value, error } = typeof outcome === "string" ? JSON.parse(outcome) : outcome;
  if (error) throw errorFromNative(error);
  return value;
}

/** A hook's params as the JSON text the addon takes (`undefined` params become `null`). */
const paramsJson = (params) => JSON.stringify(params ?? null);

/** Runs a native call (sync or async) and settles its outcome, normalising any thrown error. */
export async function invoke(call) {
  let outcome;
  try {
    outcome = await call();
  } catch (error) {
    throw plainError(error);
  }
  return settle(outcome);
}

/** A callback Rust may invoke: a throw inside it must never take the worker down. */
function guarded(fn) {
  return (...args) => {
    try {
      fn(...args);
    } catch {
      // The SDK's ctx methods do not throw; a replaced ctx (tests) might. Dropping is safe.
    }
  };
}

/**
 * Backpressure of the stream the SDK writes the protocol to: `undefined` while it accepts more,
 * else one shared promise that settles when it has drained (or can no longer drain). Returning it
 * from the execution-log callback makes Rust hold the stream until the host has caught up, so a
 * fast command cannot pile its output up in the worker's heap.
 */
function drainWaiter(output) {
  let waiting = null;
  return () => {
    if (!output?.writableNeedDrain || output.destroyed) return undefined;
    waiting ??= new Promise((resolve) => {
      const done = () => {
        output.off("drain", done);
        output.off("close", done);
        output.off("error", done);
        waiting = null;
        resolve();
      };
      output.on("drain", done);
      output.on("close", done);
      output.on("error", done);
    });
    return waiting;
  };
}

/**
 * The provider-lifetime side of the ctx bridge. `callbacks` is handed to the native provider's
 * constructor before `setup` runs; `attach(ctx)` (from `setup`) points them at the live ctx.
 * `output` is the stream the SDK writes notifications to (`runWorker` uses `process.stdout`).
 */
export function createHostBridge({ output = process.stdout } = {}) {
  let ctx = null;
  const backpressure = drainWaiter(output);
  const callbacks = {
    log: guarded((level, message) => ctx?.logger?.[level]?.(message)),
    loginOutput: guarded((hostRouteId, workerSessionId, chunk) =>
      ctx?.loginPty?.output(hostRouteId, workerSessionId, chunk),
    ),
    loginExit: guarded((hostRouteId, workerSessionId, exitCode) =>
      ctx?.loginPty?.exit(hostRouteId, workerSessionId, exitCode),
    ),
    duplexData: guarded((hostRouteId, workerSessionId, chunk) =>
      ctx?.duplexChannel?.data(hostRouteId, workerSessionId, chunk),
    ),
    duplexExit: guarded((hostRouteId, workerSessionId, exitCode, transportClosed) =>
      ctx?.duplexChannel?.exit(hostRouteId, workerSessionId, exitCode, transportClosed),
    ),
  };
  return {
    callbacks,
    attach(next) {
      ctx = next;
    },
    detach() {
      ctx = null;
    },
    /**
     * `ctx.execution.log` for the hook running now. It must be created inside the hook: the
     * SDK stamps each chunk with the host's invocation id from the hook's async context, and
     * Node 24 loses that context for calls that arrive from a Rust thread unless the callback
     * is bound to it here.
     */
    executionLog() {
      const current = ctx;
      const log = guarded((stream, chunk) => current?.execution?.log(stream, chunk));
      // Rust sends the chunks that queued up while JS was busy as one flat batch,
      // [stream, chunk, stream, chunk, ...]; each chunk is still its own ctx call.
      return AsyncResource.bind((batch) => {
        for (let i = 0; i + 1 < batch.length; i += 2) log(batch[i], batch[i + 1]);
        return backpressure();
      });
    },
  };
}


/**
 * Each `definePlugin` hook a native provider can implement, and the provider method it forwards
 * to. Every method takes the hook's params and resolves with an outcome.
 */
const NATIVE_METHODS = {
  onHealth: "health",
  onEnvironmentValidateConfig: "validateConfig",
  onEnvironmentProbe: "probe",
  onEnvironmentAcquireLease: "acquireLease",
  onEnvironmentResumeLease: "resumeLease",
  onEnvironmentReleaseLease: "releaseLease",
  onEnvironmentDestroyLease: "destroyLease",
  onEnvironmentRealizeWorkspace: "realizeWorkspace",
  onEnvironmentExecute: "execute",
  onEnvironmentSyncIn: "syncIn",
  onEnvironmentSyncOut: "syncOut",
  onEnvironmentStartInteractiveSetup: "startInteractiveSetup",
  onEnvironmentGetInteractiveSetup: "getInteractiveSetup",
  onEnvironmentCancelInteractiveSetup: "cancelInteractiveSetup",
  onEnvironmentCaptureTemplate: "captureTemplate",
  onEnvironmentDeleteTemplate: "deleteTemplate",
  onLoginPtyOpen: "loginPtyOpen",
  onLoginPtyInput: "loginPtyInput",
  onLoginPtyStop: "loginPtyStop",
  onLoginPtyClose: "loginPtyClose",
  onDuplexChannelOpen: "duplexChannelOpen",
  onDuplexChannelWrite: "duplexChannelWrite",
  onDuplexChannelStop: "duplexChannelStop",
  onDuplexChannelClose: "duplexChannelClose",
};

/**
 * The `definePlugin` definition of a native provider: `setup` and `onShutdown`, plus exactly the
 * hooks named in `hooks` (the host routes traffic by the methods a worker advertises, so a hook
 * is listed only once Rust implements it). Each hook forwards its params and returns the
 * provider's promise; execute also hands Rust the call's bound `ctx.execution.log`.
 */
export function nativePluginDefinition(provider, host, hooks) {
  const definition = {
    async setup(ctx) {
      host.attach(ctx);
      await invoke(() => provider.setup());
    },
    async onShutdown() {
      await invoke(() => provider.shutdown());
      host.detach();
    },
  };
  for (const hook of hooks) {
    const method = NATIVE_METHODS[hook];
    if (!method || typeof provider[method] !== "function") {
      throw new Error(`paperclip-sandbox-native: ${hook} has no native implementation`);
    }
    definition[hook] =
      hook === "onEnvironmentExecute"
        ? async (params) => invoke(() => provider.execute(paramsJson(params), host.executionLog()))
        : async (params) => invoke(() => provider[method](paramsJson(params)));
  }
  return definition;
}
