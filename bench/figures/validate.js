// Figure group `validate`: sequential `environmentValidateConfig` calls over stdio: calls/s and
// worker CPU per call; then the same for `health`, the cheapest hook, whose CPU above the floor's
// is a hook call's fixed cost (issue #19 item 2). All workers are up at once and take turns run by
// run (see cold-start.js), after 300 warm-up calls of each.
//
// Floors. The SDK-only worker answers validate with `{ok: true, normalizedConfig: <the config it
// was sent>}`: the least a plugin can do that honours the contract's reply, so the SDK's parse of
// the request and its stringify of a reply that carries the config are on both sides of the
// comparison. It runs twice: once with the CreateOS request (the `sdk` column) and once, as
// `sdkKubernetes`, with the Kubernetes request, whose kubeconfig (~1.3 KB) the SDK parses and
// stringifies whatever the plugin does; each provider is compared with the floor sent its own
// request.
//
// CPU is the scheduler's exact runtime of the worker's threads (`procCpuSecondsExact`), falling
// back to utime+stime ticks where the kernel has no per-task `sched` file (the report says which).
// The bench and every worker are pinned to one core for the group, as the issue's own table was:
// unpinned, each sequential call has the worker wake on the other core from idle, and on this VM
// that wake-up costs 20-30 us of the worker's CPU per call, varying 2x from run to run, which
// buries the few microseconds a hook adds (pinned, the same floor measures 7-9 us a call, +-1).

import { execFileSync } from "node:child_process";

import { log, now, startWorker } from "../lib/common.js";
import { procCpuSeconds, procCpuSecondsExact, stats } from "../lib/host.js";

export async function validateFigures(ctx) {
  log("validate (workers interleaved)");
  const { specs, env } = ctx;
  const calls = ctx.validateCalls;
  // Worker key -> [spec key, validate params].
  const plan = Object.fromEntries(Object.keys(specs).map((key) => [key, [key, env.validateParams[key]]]));
  if (specs.sdk) plan.sdkKubernetes = ["sdk", env.validateParams.kubernetes];
  const workers = {};
  const exact = { used: true };
  const cpuSeconds = (pid) => {
    const value = exact.used ? procCpuSecondsExact(pid) : null;
    if (value !== null) return value;
    exact.used = false;
    return procCpuSeconds(pid);
  };
  const pinning = pinToOneCore(process.pid);
  try {
    for (const [key, [specKey, params]] of Object.entries(plan)) {
      const worker = await startWorker(specs[specKey]);
      workers[key] = worker;
      if (pinning) pinning.pin(worker.pid);
      const first = await worker.call("environmentValidateConfig", params);
      if (first?.ok !== true) ctx.notes.push(`${specs[specKey].label}: validate answered ${JSON.stringify(first).slice(0, 200)}`);
      for (let i = 0; i < 300; i++) await worker.call("environmentValidateConfig", params);
    }
    for (const worker of Object.values(workers)) {
      for (let i = 0; i < 300; i++) await worker.call("health", {});
    }
    const hooks = { validate: (key) => ["environmentValidateConfig", plan[key][1]], health: () => ["health", {}] };
    for (const [figure, request] of Object.entries(hooks)) {
      // `health` takes no params: a second floor would only measure the same thing twice.
      const keys = Object.keys(workers).filter((k) => figure === "validate" || k !== "sdkKubernetes");
      const rates = Object.fromEntries(keys.map((k) => [k, []]));
      const cpu = Object.fromEntries(keys.map((k) => [k, []]));
      for (let run = 0; run < ctx.runs; run++) {
        for (const key of keys) {
          const worker = workers[key];
          const [method, params] = request(key);
          const cpu0 = cpuSeconds(worker.pid);
          const t0 = now();
          for (let i = 0; i < calls; i++) await worker.call(method, params);
          const elapsed = now() - t0;
          const cpu1 = cpuSeconds(worker.pid);
          rates[key].push(calls / (elapsed / 1000));
          cpu[key].push(((cpu1 - cpu0) / calls) * 1e6);
        }
      }
      for (const k of keys) ctx.figures[`${figure}.${k}`] = { callsPerSec: stats(rates[k]), cpuUsPerCall: stats(cpu[k]), cpuClock: exact.used ? "sched" : "ticks" };
    }
  } finally {
    for (const worker of Object.values(workers)) await worker.shutdown();
    pinning?.restore();
  }
  if (pinning) ctx.notes.push(`validate: the bench and the workers pinned to CPU ${pinning.cpu} for the group (taskset)`);
  else ctx.notes.push("validate: not pinned to one core (no taskset here): CPU per call includes cross-core wake-ups and varies far more");
  if (!exact.used) ctx.notes.push("validate: no per-task `sched` files on this kernel, so CPU per call is utime+stime in 10 ms ticks");
}

/**
 * Pins `pid` (all its threads) to one CPU with `taskset`, returning how to pin the workers the same
 * way and how to give the bench back its own affinity; null when taskset is missing or refused.
 */
function pinToOneCore(pid) {
  const taskset = (...args) => execFileSync("taskset", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  try {
    const original = /: ([\d,-]+)\s*$/.exec(taskset("-p", "-c", String(pid)))?.[1];
    if (!original) return null;
    const cpu = original.split(/[,-]/)[0];
    const pin = (target) => taskset("-a", "-p", "-c", cpu, String(target));
    pin(pid);
    return { cpu, pin, restore: () => taskset("-a", "-p", "-c", original, String(pid)) };
  } catch {
    return null;
  }
}
