// The host side of a benchmark run: the shipped forked-worker host (lib/forked-worker.js, the one
// the tests and the CLI use: `child_process.fork` with stdio pipes plus an ipc channel, minimal
// environment, NDJSON JSON-RPC) in its lean mode, which keeps no line or notification it is not
// asked to keep, so a 64 MiB stream does not also measure the host retaining every line. This file
// only adapts it to the benchmarks' call shape and adds the /proc readings.

import { readdirSync, readFileSync, writeFileSync } from "node:fs";

import { initializeParams as hostInitializeParams } from "../../lib/json-rpc.js";
import { ForkedWorker, pluginEntry as hostPluginEntry, pluginRoot } from "../../lib/forked-worker.js";

export const CLK_TCK = 100; // Linux USER_HZ; /proc/<pid>/stat times are in these ticks.

/** A forked worker with the benchmarks' calls: `call(method, params, invocation)`, one listener. */
export class BenchWorker {
  #unsubscribe = null;

  constructor(worker) {
    this.worker = worker;
    this.child = worker.child;
    this.pid = worker.pid;
    this.exited = worker.exited;
  }

  get stderr() {
    return this.worker.stderr;
  }

  /**
   * Forks `entrypoint` with the host's minimal environment (plus `env`). `execArgv` replaces
   * Node's own flags for the child (the host passes none; the bench passes a probe preload).
   */
  static fork(entrypoint, env = {}, { execArgv = [] } = {}) {
    const napiPath = process.env.NAPI_RS_NATIVE_LIBRARY_PATH ? { NAPI_RS_NATIVE_LIBRARY_PATH: process.env.NAPI_RS_NATIVE_LIBRARY_PATH } : {};
    return new BenchWorker(ForkedWorker.fork(entrypoint, { env: { ...napiPath, ...env }, execArgv, retain: false }));
  }

  /** Sets the one notification listener (null to clear). */
  onNotification(listener) {
    this.#unsubscribe?.();
    this.#unsubscribe = listener ? this.worker.rpc.onNotification(listener) : null;
  }

  request(method, params, invocation) {
    return this.worker.request(method, params, invocation ? { invocation } : undefined);
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
    this.worker.kill();
  }
}

/** A plugin package's manifest and worker entrypoint, resolved as the host does. */
export function pluginEntry(pluginName) {
  return hostPluginEntry(pluginRoot(pluginName));
}

export function initializeParams(manifest) {
  return hostInitializeParams(manifest, { instanceId: "bench-instance" });
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

/**
 * CPU time of every live thread of `pid`, in seconds, to the nanosecond: the scheduler's
 * `se.sum_exec_runtime` (milliseconds in `/proc/<pid>/task/<tid>/sched`), not utime+stime's
 * 10 ms ticks, which over a few thousand calls of a ~30 us hook are a 3 us grain, coarser than
 * the 5 us a hook may add (issue #19). Threads that exit inside a window take their time with
 * them, so use it for windows in which no thread ends (sequential hook calls). Null when the
 * kernel has no `sched` file (CONFIG_SCHED_DEBUG off).
 */
export function procCpuSecondsExact(pid) {
  let ms = 0;
  let tasks;
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  for (const tid of tasks) {
    let text;
    try {
      text = readFileSync(`/proc/${pid}/task/${tid}/sched`, "utf8");
    } catch (error) {
      if (error.code === "ENOENT" || error.code === "ESRCH") continue; // the thread ended meanwhile
      return null;
    }
    const match = /^se\.sum_exec_runtime\s*:\s*([\d.]+)/m.exec(text);
    if (!match) return null;
    ms += Number(match[1]);
  }
  return ms / 1000;
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
