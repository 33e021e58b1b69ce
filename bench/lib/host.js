// The host side of a benchmark run: forks a worker the way the Paperclip host does
// (`child_process.fork` with stdio pipes plus an ipc channel, minimal environment) and speaks
// NDJSON JSON-RPC to it. Unlike scripts/lib/json-rpc.js it keeps nothing it is not asked to
// keep, so a 64 MiB stream does not also measure the host retaining every line.

import { fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { repoRoot } from "../../scripts/lib/paths.js";

export const CLK_TCK = 100; // Linux USER_HZ; /proc/<pid>/stat times are in these ticks.

/** A forked worker and a lean JSON-RPC peer over its stdio. */
export class BenchWorker {
  #nextId = 1;
  #pending = new Map();
  #parts = [];
  #onNotification = null;
  stderr = "";

  constructor(child) {
    this.child = child;
    this.pid = child.pid;
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => this.#onData(chunk));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      if (this.stderr.length < 64_000) this.stderr += chunk;
    });
    this.exited = once(child, "exit").then(([code, signal]) => ({ code, signal }));
    this.exited.then(() => {
      for (const { reject } of this.#pending.values()) reject(new Error(`worker exited: ${this.stderr.slice(-2000)}`));
      this.#pending.clear();
    });
  }

  /**
   * Forks `entrypoint` with the host's minimal environment (plus `env`). `execArgv` replaces
   * Node's own flags for the child (the host passes none; the bench passes a probe preload).
   */
  static fork(entrypoint, env = {}, { execArgv = [] } = {}) {
    const child = fork(entrypoint, [], {
      stdio: ["pipe", "pipe", "pipe", "ipc"],
      execArgv,
      detached: false,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: "production",
        TZ: "UTC",
        PAPERCLIP_PLUGIN_ID: randomUUID(),
        ...(process.env.NAPI_RS_NATIVE_LIBRARY_PATH ? { NAPI_RS_NATIVE_LIBRARY_PATH: process.env.NAPI_RS_NATIVE_LIBRARY_PATH } : {}),
        ...env,
      },
    });
    return new BenchWorker(child);
  }

  #onData(chunk) {
    // Search only the new chunk for newlines: a long line (a 64 MiB execute result) arrives in
    // many chunks, and rescanning the accumulated text each time would be quadratic.
    let start = 0;
    let nl;
    while ((nl = chunk.indexOf("\n", start)) !== -1) {
      let line = chunk.slice(start, nl);
      if (this.#parts.length > 0) {
        this.#parts.push(line);
        line = this.#parts.join("");
        this.#parts = [];
      }
      start = nl + 1;
      if (line.length > 0) this.#onLine(line);
    }
    if (start < chunk.length) this.#parts.push(start === 0 ? chunk : chunk.slice(start));
  }

  #onLine(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    if (message.id !== undefined && message.method === undefined) {
      const pending = this.#pending.get(message.id);
      if (pending) {
        this.#pending.delete(message.id);
        pending.resolve(message);
      }
      return;
    }
    if (message.id !== undefined) {
      const reply =
        message.method === "span.record"
          ? { jsonrpc: "2.0", id: message.id, result: null }
          : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `${message.method} not served by the bench host` } };
      this.child.stdin.write(`${JSON.stringify(reply)}\n`);
      return;
    }
    this.#onNotification?.(message);
  }

  /** Sets the one notification listener (null to clear). */
  onNotification(listener) {
    this.#onNotification = listener;
  }

  request(method, params, invocation) {
    const id = this.#nextId++;
    const message = { jsonrpc: "2.0", id, method, params };
    if (invocation) message.paperclipInvocation = invocation;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.child.stdin.write(`${JSON.stringify(message)}\n`);
    });
  }

  async call(method, params, invocation) {
    const response = await this.request(method, params, invocation);
    if (response.error) throw new Error(`${method}: ${response.error.message}`);
    return response.result;
  }

  async shutdown(timeoutMs = 10_000) {
    const timer = setTimeout(() => this.kill(), timeoutMs);
    try {
      await Promise.race([this.request("shutdown", {}), this.exited]);
    } catch {
      // exited first
    }
    await this.exited;
    clearTimeout(timer);
  }

  kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }
}

/** A plugin package's manifest and worker entrypoint, resolved as the host does. */
export async function pluginEntry(pluginName) {
  const packageRoot = path.join(repoRoot, "plugins", pluginName);
  const packageJson = JSON.parse(await readFile(path.join(packageRoot, "package.json"), "utf8"));
  const manifestUrl = pathToFileURL(path.join(packageRoot, packageJson.paperclipPlugin.manifest));
  const manifest = (await import(manifestUrl.href)).default;
  return { manifest, entrypoint: path.resolve(packageRoot, manifest.entrypoints.worker) };
}

export function initializeParams(manifest) {
  return {
    manifest,
    config: {},
    instanceInfo: { instanceId: "bench-instance", hostVersion: "2026.916.1" },
    apiVersion: 1,
  };
}

/** VmRSS / VmHWM of `pid` in KiB. */
export function procStatus(pid) {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN);
  return { rssKiB: field("VmRSS"), hwmKiB: field("VmHWM") };
}

/** utime + stime of `pid`, in seconds. */
export function procCpuSeconds(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** Resets VmHWM to the current RSS (Linux >= 4.0, needs write access to clear_refs). */
export function resetPeakRss(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

export function stats(values) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return { n: 0, median: NaN, min: NaN, max: NaN };
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { n: sorted.length, median, min: sorted[0], max: sorted.at(-1) };
}
