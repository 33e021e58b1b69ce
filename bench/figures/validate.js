// Figure group `validate`: sequential `environmentValidateConfig` calls over stdio: calls/s and
// worker CPU (utime+stime) per call; then the same for `health`, the cheapest hook, whose CPU
// above the floor's is a hook call's fixed cost (issue #19 item 2). All four workers are up at
// once and take turns run by run (see cold-start.js), after 300 warm-up calls of each.

import { log, now, startWorker } from "../lib/common.js";
import { procCpuSeconds, stats } from "../lib/host.js";

export async function validateFigures(ctx) {
  log("validate (workers interleaved)");
  const { specs, env } = ctx;
  const calls = ctx.validateCalls;
  const workers = {};
  try {
    for (const [key, spec] of Object.entries(specs)) {
      const worker = await startWorker(spec);
      workers[key] = worker;
      const params = env.validateParams[key];
      const first = await worker.call("environmentValidateConfig", params);
      if (first?.ok !== true) ctx.notes.push(`${spec.label}: validate answered ${JSON.stringify(first).slice(0, 200)}`);
      for (let i = 0; i < 300; i++) await worker.call("environmentValidateConfig", params);
    }
    for (const worker of Object.values(workers)) {
      for (let i = 0; i < 300; i++) await worker.call("health", {});
    }
    const hooks = { validate: (key) => ["environmentValidateConfig", env.validateParams[key]], health: () => ["health", {}] };
    for (const [figure, request] of Object.entries(hooks)) {
      const rates = Object.fromEntries(Object.keys(specs).map((k) => [k, []]));
      const cpu = Object.fromEntries(Object.keys(specs).map((k) => [k, []]));
      for (let run = 0; run < ctx.runs; run++) {
        for (const [key, worker] of Object.entries(workers)) {
          const [method, params] = request(key);
          const cpu0 = procCpuSeconds(worker.pid);
          const t0 = now();
          for (let i = 0; i < calls; i++) await worker.call(method, params);
          const elapsed = now() - t0;
          const cpu1 = procCpuSeconds(worker.pid);
          rates[key].push(calls / (elapsed / 1000));
          cpu[key].push(((cpu1 - cpu0) / calls) * 1e6);
        }
      }
      for (const k of Object.keys(specs)) ctx.figures[`${figure}.${k}`] = { callsPerSec: stats(rates[k]), cpuUsPerCall: stats(cpu[k]) };
    }
  } finally {
    for (const worker of Object.values(workers)) await worker.shutdown();
  }
}
