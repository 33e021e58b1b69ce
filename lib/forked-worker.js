// Forks a plugin worker exactly as the Paperclip host does: the manifest's
// `entrypoints.worker` resolved against the package root, `child_process.fork` with stdio pipes
// plus an (unused) ipc channel, and a minimal environment instead of the host's own.

import { fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { JsonRpcPeer, initializeParams } from "./json-rpc.js";
import { repoRoot } from "./paths.js";

export class ForkedWorker {
  stderr = "";

  constructor(child, manifest) {
    this.child = child;
    this.manifest = manifest;
    this.rpc = new JsonRpcPeer(child.stdout, child.stdin);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      this.stderr += chunk;
    });
    this.exited = once(child, "exit").then(([code, signal]) => ({ code, signal }));
  }

  /** Loads `plugins/<name>`'s manifest, forks its worker and sends `initialize`. */
  static async start(pluginName, { env = {} } = {}) {
    const packageRoot = path.join(repoRoot, "plugins", pluginName);
    const packageJson = JSON.parse(await readFile(path.join(packageRoot, "package.json"), "utf8"));
    const manifestUrl = pathToFileURL(path.join(packageRoot, packageJson.paperclipPlugin.manifest));
    const manifest = (await import(manifestUrl.href)).default;
    const entrypoint = path.resolve(packageRoot, manifest.entrypoints.worker);
    const child = fork(entrypoint, [], {
      stdio: ["pipe", "pipe", "pipe", "ipc"],
      detached: false,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: "production",
        TZ: "UTC",
        PAPERCLIP_PLUGIN_ID: randomUUID(),
        ...env,
      },
    });
    const worker = new ForkedWorker(child, manifest);
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
