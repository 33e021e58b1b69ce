// Figure group `cold`: fork -> `initialize` reply (ms) and VmRSS right after it (MiB), a fresh
// worker each run. The workers take turns run by run, so load from elsewhere on a shared
// machine hits them alike.
//
// Beside it, the addon's own share of a cold start (`coldStart.addon`): bench/lib/addon-load.js
// in a fresh process per run, timing inside that process from the import of the native package
// to both providers constructed, and the VmRSS the load added; then the same window counted in
// instructions under callgrind (repeatable where whole-process cold start on this VM swings
// by a third from run to run).

import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { callgrind, haveValgrind } from "../lib/callgrind.js";
import { log, now } from "../lib/common.js";
import { BenchWorker, initializeParams, procStatus, stats } from "../lib/host.js";

const probe = path.join(path.dirname(fileURLToPath(import.meta.url)), "../lib/addon-load.js");
/** The vm.Script call that holds the probe's synchronous load (see addon-load.js). */
const WINDOW = "node::contextify::ContextifyScript::RunInContext*";

/** The environment the probe runs in: as bare as a forked worker's, plus the addon override. */
function probeEnv() {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
  if (process.env.NAPI_RS_NATIVE_LIBRARY_PATH) env.NAPI_RS_NATIVE_LIBRARY_PATH = process.env.NAPI_RS_NATIVE_LIBRARY_PATH;
  return env;
}

function runProbe(args = []) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [probe, ...args], { env: probeEnv() }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`addon-load probe failed: ${String(stderr).trim().split("\n").slice(-3).join(" | ")}`));
      resolve(JSON.parse(stdout.trim().split("\n").at(-1)));
    });
  });
}

export async function coldStartFigures(ctx) {
  log("cold start (workers interleaved, then the addon's own share)");
  const keys = Object.keys(ctx.specs);
  const times = Object.fromEntries(keys.map((k) => [k, []]));
  const rss = Object.fromEntries(keys.map((k) => [k, []]));
  const loads = [];
  for (let i = 0; i < ctx.runs; i++) {
    for (const [key, spec] of Object.entries(ctx.specs)) {
      const t0 = now();
      const worker = BenchWorker.fork(spec.entrypoint);
      await worker.call("initialize", initializeParams(spec.manifest));
      times[key].push(now() - t0);
      rss[key].push(procStatus(worker.pid).rssKiB / 1024);
      await worker.shutdown();
    }
    // In the same turn as the workers, so the addon's share and the whole cold start see the
    // same machine.
    loads.push(await runProbe());
  }
  for (const k of keys) ctx.figures[`coldStart.${k}`] = { initMs: stats(times[k]), rssMiB: stats(rss[k]) };

  const pick = (field, scale = 1) => stats(loads.map((l) => l[field] / scale));
  const addon = {
    ms: pick("ms"),
    pluginKitMs: pick("pluginKitMs"),
    addonImportMs: pick("addonImportMs"),
    constructMs: pick("constructMs"),
    rssMiB: pick("rssKiB", 1024),
    anonMiB: pick("anonKiB", 1024),
    fileMiB: pick("fileKiB", 1024),
    instructions: null,
    windowInstructions: null,
  };
  if (haveValgrind()) {
    // Each run is a whole Node start under valgrind (~10 s here); the count barely moves.
    const runs = ctx.quick ? 1 : 3;
    log(`addon load under callgrind (${runs} runs)`);
    const counts = [];
    for (let i = 0; i < runs; i++) counts.push((await callgrind(process.execPath, [probe, "--sync"], { toggle: WINDOW, env: probeEnv() })).instructions);
    addon.instructions = stats(counts);
    // The window with nothing in it: what the measuring itself adds.
    addon.windowInstructions = (await callgrind(process.execPath, [probe, "--sync", "--none"], { toggle: WINDOW, env: probeEnv() })).instructions;
  } else {
    ctx.notes.push("valgrind is not installed: the addon load's instruction count was not measured (apt-get install valgrind)");
  }
  ctx.figures["coldStart.addon"] = addon;
}
