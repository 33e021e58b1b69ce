// The host side of bench/lib/stall-probe.js: how to fork a worker with the probe preloaded,
// and how to ask it for a report (SIGUSR2, then wait for its line in the report file).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { removeOnExit } from "./common.js";

const probeUrl = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), "stall-probe.js")).href;

/** A temp dir for report files; remove() at the end. */
export function probeDir() {
  const dir = mkdtempSync(path.join(tmpdir(), "paperclip-bench-probe-"));
  const onExit = removeOnExit(dir);
  let n = 0;
  return {
    /**
     * Fork options for one probed worker: {env, execArgv} for BenchWorker.fork, and its
     * report file. `gc` adds --expose-gc so the probe can collect before sampling memory.
     */
    options({ gc = false, resolutionMs = 2 } = {}) {
      const file = path.join(dir, `probe-${++n}.ndjson`);
      writeFileSync(file, "");
      return {
        file,
        env: { BENCH_PROBE_FILE: file, BENCH_PROBE_RESOLUTION_MS: String(resolutionMs) },
        execArgv: [...(gc ? ["--expose-gc"] : []), "--import", probeUrl],
      };
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
      onExit.forget();
    },
  };
}

/**
 * Asks the probe in `worker` for a report (and resets its histogram). Resolves with the parsed
 * report, stall figures already net of the timer resolution. The signal is handled on the
 * worker's event loop, so the wait is for that loop to come round; polling the file is the
 * bench waiting for an answer, not a timing assumption.
 */
export async function readProbe(worker, file, timeoutMs = 30_000) {
  const before = readFileSync(file, "utf8").length;
  process.kill(worker.pid, "SIGUSR2");
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const text = readFileSync(file, "utf8");
    if (text.length > before && text.endsWith("\n")) {
      const report = JSON.parse(text.slice(before).trim().split("\n").at(-1));
      const net = (v) => (v === null ? null : Math.max(0, v - report.resolutionMs));
      return { ...report, stallMaxMs: net(report.maxMs), stallP99Ms: net(report.p99Ms) };
    }
    if (performance.now() > deadline) throw new Error(`no probe report from worker ${worker.pid} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
