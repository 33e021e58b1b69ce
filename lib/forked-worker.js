// Forks a plugin worker exactly as the Paperclip host does: the manifest's
// `entrypoints.worker` resolved against the package root, `child_process.fork` with stdio pipes
// plus an (unused) ipc channel, and a minimal environment instead of the host's own.

import { fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { JsonRpcPeer, initializeParams } from "./json-rpc.js";
import { packageRoot } from "./paths.js";

const require = createRequire(import.meta.url);

/** The plugin package of each provider. */
export const PLUGIN_PACKAGES = {
  createos: "@paperclipai/plugin-createos",
  kubernetes: "@paperclipai/plugin-kubernetes",
};

/**
 * The root of a provider's plugin package: the plugin whose own node_modules holds this package
 * (a self-contained local-path layout), else the one Node resolves from here (the npm workspace
 * link in a checkout, a sibling in an npm install). A path is taken as is.
 */
export function pluginRoot(plugin) {
  if (path.isAbsolute(plugin)) return plugin;
  const name = PLUGIN_PACKAGES[plugin];
  if (!name) throw new Error(`unknown provider: ${plugin}`);
  const enclosing = path.resolve(packageRoot, "../..");
  const enclosingJson = path.join(enclosing, "package.json");
  if (path.basename(path.dirname(packageRoot)) === "node_modules" && existsSync(enclosingJson)) {
    if (JSON.parse(readFileSync(enclosingJson, "utf8")).name === name) return enclosing;
  }
  try {
    return realpathSync(path.dirname(require.resolve(`${name}/package.json`)));
  } catch {
    // not installed beside this package
  }
  throw new Error(`the ${plugin} plugin package ${name} is not installed beside paperclip-sandbox-native (npm install ${name})`);
}

export class ForkedWorker {
  stderr = "";

  /** `retain: false`: a lean peer (see JsonRpcPeer) and stderr kept to its first 64 KiB. */
  constructor(child, manifest, { retain = true } = {}) {
    this.child = child;
    this.pid = child.pid;
    this.manifest = manifest;
    this.rpc = new JsonRpcPeer(child.stdout, child.stdin, { retain });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      if (retain || this.stderr.length < 64_000) this.stderr += chunk;
    });
    this.exited = once(child, "exit").then(([code, signal]) => ({ code, signal }));
  }

  /**
   * Forks `entrypoint` as the host does: stdio pipes plus an (unused) ipc channel, the host's
   * minimal environment plus `env`, and `execArgv` as Node's own flags (the host passes none).
   */
  static fork(entrypoint, { env = {}, execArgv = [], manifest = null, retain = true } = {}) {
    const child = fork(entrypoint, [], {
      stdio: ["pipe", "pipe", "pipe", "ipc"],
      execArgv,
      detached: false,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: "production",
        TZ: "UTC",
        PAPERCLIP_PLUGIN_ID: randomUUID(),
        ...env,
      },
    });
    const worker = new ForkedWorker(child, manifest, { retain });
    worker.entrypoint = entrypoint;
    return worker;
  }

  /**
   * Loads a plugin package's manifest (a provider name, see `pluginRoot`, or a package root),
   * forks the worker its `entrypoints.worker` names and sends `initialize`.
   */
  static async start(plugin, { env = {} } = {}) {
    const { manifest, entrypoint } = await pluginEntry(pluginRoot(plugin));
    const worker = ForkedWorker.fork(entrypoint, { env, manifest });
    worker.initializeResult = await worker.rpc.call("initialize", initializeParams(manifest));
    return worker;
  }

  call(method, params, options) {
    return this.rpc.call(method, params, options);
  }

  request(method, params, options) {
    return this.rpc.request(method, params, options);
  }

  /** Sends `shutdown` and waits for the process to exit on its own. */
  async shutdown() {
    const reply = await this.rpc.request("shutdown", {});
    const exit = await this.exited;
    return { reply, exit };
  }

  kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }
}

/**
 * A plugin package's manifest and worker file, found as the host finds them: the manifest from
 * `paperclipPlugin.manifest`, the worker from the manifest's `entrypoints.worker`, resolved
 * against the package root.
 */
export async function pluginEntry(root) {
  const packageJson = JSON.parse(await readFile(path.join(root, "package.json"), "utf8"));
  const manifestUrl = pathToFileURL(path.join(root, packageJson.paperclipPlugin.manifest));
  const manifest = (await import(manifestUrl.href)).default;
  return { manifest, entrypoint: path.resolve(root, manifest.entrypoints.worker) };
}
