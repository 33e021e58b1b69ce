#!/usr/bin/env node
// Profiling driver: bursts of concurrent Kubernetes executes (as the `stall` bench figure), with
// the worker's main thread under V8's CPU profiler, then a timeline of the main thread: every
// stretch it was busy for longer than a threshold, and the functions it spent that stretch in.
//
//   node bench/profile/stall.js [executes=200] [leases=50] [bursts=3] [thresholdMs=10]
//
// The .cpuprofile is left in a temp dir (printed) for Chrome DevTools.

import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import { startEmulator } from "../../lib/emulators.js";
import { pool } from "../lib/common.js";
import { BenchWorker, initializeParams, pluginEntry } from "../lib/host.js";
import { probeDir, readProbe } from "../lib/probe.js";

const [executes = 200, leasesN = 50, bursts = 3, thresholdMs = 10] = process.argv.slice(2).map(Number);
const profileDir = mkdtempSync(path.join(os.tmpdir(), "paperclip-stall-"));

const emulator = await startEmulator("kubernetes-emulator", ["--fast", "--token", "profile-token"]);
// NICE=n: run the emulator (and the sandboxes it spawns) at that niceness, standing in for a
// cluster on other machines; the stall is then the worker's, not this machine's CPU contention.
if (process.env.NICE) os.setPriority(emulator.child.pid, Number(process.env.NICE));
const kubeconfig = await readFile(emulator.kubeconfig, "utf8");
const kubernetes = await pluginEntry("kubernetes");
// PROFILE=0: only the stall probe (the profiler's own sampling thread competes for the CPU too).
const cpuProfile = process.env.PROFILE !== "0";
const probes = probeDir();
const probe = probes.options();
const worker = BenchWorker.fork(kubernetes.entrypoint, probe.env, {
  execArgv: [...(cpuProfile ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`, "--cpu-prof-interval=250"] : []), ...probe.execArgv],
});
await worker.call("initialize", initializeParams(kubernetes.manifest));

const base = { driverKey: "kubernetes", companyId: "company-1", environmentId: "env-1" };
const config = { kubeconfig, companySlug: "acme", backend: "sandbox-cr", egressMode: "cilium" };
let seq = 0;
const invocation = () => ({ id: `stall-${++seq}`, scope: { companyId: "company-1" } });
const leases = await pool(
  Array.from({ length: leasesN }, (_, i) => () => worker.call("environmentAcquireLease", { ...base, config, runId: `stall-${i}` }, invocation())),
  10,
);
const exec = (lease) => () => worker.call("environmentExecute", { ...base, config, lease, command: "sh", args: ["-c", "echo ok"], timeoutMs: 120_000 }, invocation());
await pool(leases.map((lease) => exec(lease)), 10); // each lease's first-use readiness check
for (let b = 0; b < bursts; b++) {
  await readProbe(worker, probe.file);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: executes }, (_, i) => exec(leases[i % leasesN])()));
  const wall = performance.now() - t0;
  const { stallMaxMs, stallP99Ms } = await readProbe(worker, probe.file);
  console.error(`burst ${b}: ${executes} executes in ${wall.toFixed(0)} ms; worst event-loop stall ${stallMaxMs.toFixed(1)} ms (p99 ${stallP99Ms.toFixed(1)})`);
}
await pool(leases.map((lease) => () => worker.call("environmentReleaseLease", { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, invocation())), 10);
await worker.shutdown();
await emulator.stop();
probes.remove();
if (!cpuProfile) process.exit(0);

// The main thread's timeline: samples are (node, delta since the previous sample).
const file = path.join(profileDir, readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile")));
const profile = JSON.parse(readFileSync(file, "utf8"));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const label = (id) => {
  const { functionName, url, lineNumber } = nodes.get(id).callFrame;
  return `${functionName || "(anonymous)"} ${url ? `${path.basename(url)}:${lineNumber + 1}` : ""}`.trim();
};
// "(program)" is native work outside JS (napi calls, libuv callbacks): busy, not idle.
const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
let t = profile.startTime;
let stretch = null;
const stretches = [];
profile.samples.forEach((id, i) => {
  t += profile.timeDeltas[i];
  if (idle.has(id)) {
    if (stretch) stretches.push(stretch);
    stretch = null;
    return;
  }
  stretch ??= { start: t, end: t, counts: new Map() };
  stretch.end = t;
  stretch.counts.set(id, (stretch.counts.get(id) ?? 0) + 1);
});
if (stretch) stretches.push(stretch);
const long = stretches.filter((s) => (s.end - s.start) / 1000 >= thresholdMs).sort((a, b) => b.end - b.start - (a.end - a.start));
console.log(`profile: ${file}`);
console.log(`${long.length} busy stretches of the main thread >= ${thresholdMs} ms`);
for (const s of long.slice(0, 8)) {
  const top = [...s.counts].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([id, n]) => `${n}x ${label(id)}`);
  console.log(`- ${((s.end - s.start) / 1000).toFixed(1)} ms at +${((s.start - profile.startTime) / 1000).toFixed(0)} ms: ${top.join("; ")}`);
}
