// The thin facade every plugin worker shares: load the addon, bridge `ctx` into Rust, and turn
// native outcomes into plain `Error`s with the exact catalogued message. No provider logic lives
// here; anything that decides something belongs in the Rust crates.

import { AsyncResource } from "node:async_hooks";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

// Resolves as the package's own loader (`index.js`, at the package root) does.
const rootRequire = createRequire(new URL("../index.js", import.meta.url));

const NATIVE_PACKAGE = "paperclip-sandbox-native";

/** `x86_64-unknown-linux-musl` -> `linux-x64-musl`: napi-rs' name for a target's package suffix. */
function platformOfTriple(triple) {
  const [arch, , os, abi] = triple.split("-");
  const cpu = { x86_64: "x64", aarch64: "arm64" }[arch] ?? arch;
  if (triple.includes("apple-darwin")) return `darwin-${cpu}`;
  return abi ? `${os}-${cpu}-${abi}` : `${os}-${cpu}`;
}

/**
 * Whether this Linux runs on musl rather than glibc, decided as the napi-generated loader decides
 * it: the `ldd` script names its libc, and only when it cannot be read does the (far slower)
 * process report say whether a glibc is loaded.
 */
function isMusl() {
  try {
    return readFileSync("/usr/bin/ldd", "utf8").includes("musl");
  } catch {
    return !process.report?.getReport?.()?.header?.glibcVersionRuntime;
  }
}

/** This process's platform in napi-rs' naming (`linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`). */
export function currentPlatform() {
  if (process.platform !== "linux") return `${process.platform}-${process.arch}`;
  return `linux-${process.arch}-${isMusl() ? "musl" : "gnu"}`;
}

const readJson = (url) => JSON.parse(readFileSync(url, "utf8"));

/** This package's package.json (read once; plugin-kit ships inside the native package). */
let nativeJson = null;
function nativePackageJson() {
  nativeJson ??= readJson(new URL("../package.json", import.meta.url));
  return nativeJson;
}

/** Every message of an error and its causes (napi-rs chains each attempt as a `cause`). */
function causeMessages(error) {
  const messages = [];
  for (let at = error, depth = 0; at && depth < 20; at = at.cause, depth += 1) {
    messages.push(at instanceof Error ? at.message : String(at));
  }
  return messages;
}

/**
 * The loader's failure, said so that a user knows what to do: a binary built for another Node.js
 * ABI, a binary that is not for this machine, an override (`NAPI_RS_NATIVE_LIBRARY_PATH`) that
 * does not load, or no binary for this platform at all (naming the platform and the package that
 * should have carried it).
 */
function explainLoadFailure(cause, override = null) {
  const native = nativePackageJson();
  const platform = currentPlatform();
  const carrier = `${NATIVE_PACKAGE}-${platform}@${native.version}`;
  const node = `Node.js ${process.versions.node} (ABI ${process.versions.modules}, N-API ${process.versions.napi})`;
  const messages = causeMessages(cause);
  const abi = messages.find((message) => /NODE_MODULE_VERSION|undefined symbol: napi_|did not self-register/.test(message));
  if (abi) {
    const built = /using\s+NODE_MODULE_VERSION (\d+)/.exec(abi)?.[1];
    const file = /^The module '([^']+)'/.exec(abi)?.[1] ?? /^([^:]+\.node)/.exec(abi)?.[1] ?? "the native binary";
    return (
      `${NATIVE_PACKAGE}: ${file} was built for another Node.js ABI` +
      `${built ? ` (NODE_MODULE_VERSION ${built})` : ""} and cannot load in ${node}. ` +
      `Reinstall ${carrier} under the Node.js that runs the host (Node.js >= 24.11), or rebuild from source (npm run build).`
    );
  }
  const foreign = messages.find((message) => /invalid ELF header|wrong ELF class|not a mach-o file|cannot open shared object|mach-o, but wrong architecture/i.test(message));
  if (foreign) {
    return `${NATIVE_PACKAGE}: the native binary for ${platform} cannot be loaded on this machine (${foreign.split("\n")[0]}). Reinstall ${carrier}, or rebuild from source (npm run build).`;
  }
  if (override) {
    return (
      `${NATIVE_PACKAGE}: NAPI_RS_NATIVE_LIBRARY_PATH names ${override}, which does not load in ${node} ` +
      `(${messages[0]?.split("\n")[0] ?? "unknown error"}). It must be a .node file (Node.js loads any other name as JavaScript; ` +
      `copy a built .so rather than linking it) built for ${platform}; unset it to load the installed binary.`
    );
  }
  const targets = (native.napi?.targets ?? []).map(platformOfTriple);
  if (targets.length > 0 && !targets.includes(platform)) {
    return `${NATIVE_PACKAGE}: no native binary is built for this platform (${platform}); prebuilt packages exist for ${targets.join(", ")}. Build from source in a checkout of the repository (npm install, needs Rust >= 1.88).`;
  }
  return (
    `${NATIVE_PACKAGE}: no native binary for this platform (${platform}, ${node}): the package ${carrier}, ` +
    `an optional dependency of ${NATIVE_PACKAGE}, should carry it and is not installed ` +
    `(npm skips it with --omit=optional, or when the lockfile was written on another platform). ` +
    `Install it (npm install ${carrier}), or build from source in a checkout (npm install, needs Rust >= 1.88).`
  );
}

/**
 * A plugin package depends on the native package by exact version; the one Node resolved must be
 * that version (a copied-in or deduplicated other version would answer with other hooks/messages).
 */
function checkPluginDependency(pluginUrl) {
  let pluginJson;
  try {
    pluginJson = readJson(new URL("../package.json", pluginUrl));
  } catch {
    return;
  }
  const wanted = pluginJson.dependencies?.[NATIVE_PACKAGE];
  if (!wanted || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(wanted)) return;
  // The native package Node resolved for the plugin is the one this file belongs to: the plugin
  // imported plugin-kit from it.
  const found = nativePackageJson().version;
  if (found !== wanted) {
    throw new Error(
      `${pluginJson.name} ${pluginJson.version} needs ${NATIVE_PACKAGE} ${wanted} exactly, but ${fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "")} is ${found}. ` +
        `Reinstall the plugin so that it gets its own copy (npm install ${pluginJson.name}@${pluginJson.version}), ` +
        `or put ${NATIVE_PACKAGE}@${wanted} in the plugin's node_modules.`,
    );
  }
}

/**
 * napi-rs chains the failed attempts of a load as causes, the last attempt outermost: the shape
 * explainLoadFailure reads.
 */
function chainOfAttempts(errors) {
  return errors.reduce((previous, current) => {
    const error = new Error(current instanceof Error ? current.message : String(current));
    if (previous) error.cause = previous;
    return error;
  }, null);
}

/**
 * The addon's exports, found where the napi-generated loader (`index.js`) looks for this
 * package's targets, without compiling that loader (a platform switch over every target napi-rs
 * knows, half of the addon's load time): the file `NAPI_RS_NATIVE_LIBRARY_PATH` names when it is
 * set (and nothing else), else the `.node` beside the package (a checkout's build), else the
 * platform package `paperclip-sandbox-native-<platform>` (refused when
 * `NAPI_RS_ENFORCE_VERSION_CHECK` is set and its version is not this package's). Node caches a
 * `.node` by its path, so an import of the package itself gets the same exports. No WASI
 * fallback: this package publishes no WASI target.
 */
function requireNative() {
  const errors = [];
  const override = process.env.NAPI_RS_NATIVE_LIBRARY_PATH;
  if (override) {
    try {
      return rootRequire(override);
    } catch (error) {
      errors.push(error);
    }
  } else {
    const native = nativePackageJson();
    const platform = currentPlatform();
    try {
      return rootRequire(`./${native.napi.binaryName}.${platform}.node`);
    } catch (error) {
      errors.push(error);
    }
    const carrier = `${NATIVE_PACKAGE}-${platform}`;
    try {
      const binding = rootRequire(carrier);
      const version = rootRequire(`${carrier}/package.json`).version;
      const enforce = process.env.NAPI_RS_ENFORCE_VERSION_CHECK;
      if (version !== native.version && enforce && enforce !== "0") {
        throw new Error(`Native binding package version mismatch, expected ${native.version} but got ${version}. You can reinstall dependencies to fix this issue.`);
      }
      return binding;
    } catch (error) {
      errors.push(error);
    }
  }
  const cause = chainOfAttempts(errors);
  throw new Error(explainLoadFailure(cause, override), { cause });
}

/**
 * Loads the native addon. With `plugin` (the plugin module's `import.meta.url`), first checks that
 * the native package Node resolves for that plugin is the exact version it depends on. A load
 * failure is reported as what it is (no binary for this platform, another ABI) instead of
 * napi-rs' generic hint about npm's optional dependencies; the failed attempts stay its `cause`.
 */
export async function loadNative({ plugin } = {}) {
  return loadNativeSync({ plugin });
}

/** {@link loadNative}, synchronously (the bench counts the load's instructions in one call). */
export function loadNativeSync({ plugin } = {}) {
  if (plugin) checkPluginDependency(plugin);
  return requireNative();
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
 * the host and to users comparing errors. Keep the message, drop the code. An Error is known by
 * its brand, not `instanceof`: napi makes its errors in the addon's realm, which need not be the
 * plugin's (Jest's VM modules).
 */
function plainError(error) {
  if (Object.prototype.toString.call(error) !== "[object Error]") return new Error(String(error));
  if (typeof error.code === "string") return new Error(error.message);
  return error;
}

/** Unwraps a native outcome, `{value?, error?}` (src/bridge/outcome.rs): its value, or a throw of its error. */
export function settle({ value, error }) {
  if (error) throw errorFromNative(error);
  return value;
}

/**
 * Runs a native call and settles its outcome, normalising any thrown error: always a promise,
 * as the original hooks are async. A synchronous hook's outcome (health, config validation) is
 * settled at once, with no await in between: an async wrapper and an await cost a hook call
 * more microtask turns than the SDK-only floor's hook takes, and so more worker CPU per call
 * than the plugin SDK alone spends.
 */
export function invoke(call) {
  let outcome;
  try {
    outcome = call();
  } catch (error) {
    return Promise.reject(plainError(error));
  }
  // A thenable, not `instanceof Promise`: napi makes its promises in the addon's realm, and a
  // plugin may run in another one (Jest's VM modules), whose `Promise` they are not.
  if (typeof outcome?.then === "function") return outcome.then(settle, rethrowPlain);
  try {
    return Promise.resolve(settle(outcome));
  } catch (error) {
    return Promise.reject(error);
  }
}

function rethrowPlain(error) {
  throw plainError(error);
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
      // [stream, chunk, stream, chunk, ...], adjacent chunks of a stream already joined
      // (bounded; see src/execution_log.rs); each entry is one ctx call.
      return AsyncResource.bind((batch) => {
        for (let i = 0; i + 1 < batch.length; i += 2) log(batch[i], batch[i + 1]);
        return backpressure();
      });
    },
  };
}


/**
 * The `definePlugin` definition of a native provider: `setup` and `onShutdown`, plus exactly the
 * hooks `provider.hooks()` describes (the host routes traffic by the methods a worker advertises,
 * and that list is the Rust hook table's). Each hook hands its params to the provider's hook
 * caller (src/bridge/caller.rs) and returns its promise; a hook the table says streams output
 * also hands Rust the call's bound `ctx.execution.log`. Nothing here knows a hook by name.
 */
export function nativePluginDefinition(provider, host) {
  const callHook = provider.hookCaller();
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
  for (const { name, streamsOutput, takesParams } of provider.hooks()) {
    if (streamsOutput) {
      definition[name] = (params) => invoke(() => callHook(name, params, host.executionLog()));
    } else if (takesParams) {
      definition[name] = (params) => invoke(() => callHook(name, params));
    } else {
      definition[name] = () => invoke(() => callHook(name));
    }
  }
  return definition;
}

/**
 * A fresh plugin of one native provider: `create` builds the provider from its ctx callbacks
 * (`(host) => NativeProvider.createos(host)`), so each plugin has its own ctx bridge, leases,
 * sessions and caches.
 */
export function nativePlugin(definePlugin, create) {
  const host = createHostBridge();
  return definePlugin(nativePluginDefinition(create(host.callbacks), host));
}
