// Figure group `cold`: fork -> `initialize` reply (ms) and VmRSS right after it (MiB), a fresh
// worker each run. The workers take turns run by run, so load from elsewhere on a shared
// machine hits them alike.

import { log, now } from "../lib/common.js";
import { BenchWorker, initializeParams, procStatus, stats } from "../lib/host.js";

export async function coldStartFigures(ctx) {
  log("cold start (workers interleaved)");
  const keys = Object.keys(ctx.specs);
  const times = Object.fromEntries(keys.map((k) => [k, []]));
  const rss = Object.fromEntries(keys.map((k) => [k, []]));
  for (let i = 0; i < ctx.runs; i++) {
    for (const [key, spec] of Object.entries(ctx.specs)) {
      const t0 = now();
      const worker = BenchWorker.fork(spec.entrypoint);
      await worker.call("initialize", initializeParams(spec.manifest));
      times[key].push(now() - t0);
      rss[key].push(procStatus(worker.pid).rssKiB / 1024);
      await worker.shutdown();
    }
  }
  for (const k of keys) ctx.figures[`coldStart.${k}`] = { initMs: stats(times[k]), rssMiB: stats(rss[k]) };
}
