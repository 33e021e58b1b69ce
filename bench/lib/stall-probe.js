// A preload for bench workers (`node --import <this file> worker.js`, via the fork's execArgv),
// so the event-loop stall is measured *inside* the worker without touching product code.
//
// It keeps a perf_hooks event-loop-delay histogram running. On SIGUSR2 it appends one JSON line
// to the file named by BENCH_PROBE_FILE (stall figures since the last report, plus memory) and
// resets the histogram, so the host can bracket exactly the window it cares about.
//
// SIGUSR2 because SIGUSR1 starts Node's inspector. If the worker was started with --expose-gc
// (only the memory figure does that), a full GC runs before memory is sampled, for a steadier
// number; the stall figure never passes that flag, so a forced GC cannot show up as a stall.

import { appendFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

const file = process.env.BENCH_PROBE_FILE;
const resolutionMs = Number(process.env.BENCH_PROBE_RESOLUTION_MS || 2);
const histogram = monitorEventLoopDelay({ resolution: resolutionMs });
histogram.enable();

const ms = (ns) => (Number.isFinite(ns) ? ns / 1e6 : null);

// A setInterval drift probe beside the histogram, only to tell *when* the worst stall happened
// (the histogram keeps no timestamps): the host compares it with when its burst started, which
// separates "parsing the burst of requests" from "handling the replies".
let last = performance.now();
let worst = { driftMs: 0, atUnixMs: null };
setInterval(() => {
  const t = performance.now();
  const drift = t - last - resolutionMs;
  if (drift > worst.driftMs) worst = { driftMs: drift, atUnixMs: performance.timeOrigin + t };
  last = t;
}, resolutionMs).unref();

if (file) {
  process.on("SIGUSR2", () => {
    // The histogram records the interval between timer ticks, i.e. resolution + delay; the
    // host subtracts the resolution to get the stall.
    const report = {
      resolutionMs,
      samples: histogram.count,
      maxMs: ms(histogram.max),
      p99Ms: ms(histogram.percentile(99)),
      p50Ms: ms(histogram.percentile(50)),
      meanMs: ms(histogram.mean),
      worstDriftMs: worst.driftMs,
      worstDriftAtUnixMs: worst.atUnixMs,
    };
    let gced = false;
    if (typeof globalThis.gc === "function") {
      globalThis.gc();
      gced = true;
    }
    const memory = process.memoryUsage();
    Object.assign(report, { gced, rssBytes: memory.rss, heapUsedBytes: memory.heapUsed, externalBytes: memory.external, arrayBuffersBytes: memory.arrayBuffers });
    appendFileSync(file, `${JSON.stringify(report)}\n`);
    histogram.reset();
    worst = { driftMs: 0, atUnixMs: null };
  });
}
