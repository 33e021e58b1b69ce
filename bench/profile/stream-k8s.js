#!/usr/bin/env node
// Profiling driver: streamed executes through a forked Kubernetes worker against the emulator's
// exec websocket, as the host sees them, repeated so a profiler can attach (the worker's pid is
// printed first, on stderr).
//
//   node bench/profile/stream-k8s.js [frameBytes=65536] [totalBytes=67108864] [runs=5] [frameBytes totalBytes runs]...
//
// Several series run one after the other in one worker (as the bench runs 64 KiB then 4 KiB).
// Env: HEAP=1 preloads bench/profile/heap-probe.js and prints the worker's memory at the end of
// each run (HEAP_GC=0: as it is, without a GC, with V8's space sizes); SMAPS=1 adds the kinds of
// mapping whose resident size changed most since the first run; MALLOC_* (glibc tunables such
// as MALLOC_ARENA_MAX) are passed to the worker.
// Each run prints one JSON line: MiB/s, frames, worker RSS before / peak, worker CPU ms per MiB.

import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { startEmulator } from "../../lib/emulators.js";
import { BenchWorker, initializeParams, pluginEntry, procCpuSeconds, procStatus, resetPeakRss } from "../lib/host.js";
import { streamScript } from "../lib/stream.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2).map(Number);
const series = [];
for (let i = 0; i === 0 || i < args.length; i += 3) {
  series.push({ frame: args[i] ?? 65536, total: args[i + 1] ?? 64 * 1024 * 1024, runs: args[i + 2] ?? 5 });
}
const heapProbe = process.env.HEAP === "1";

const kubernetes = await pluginEntry("kubernetes");
const emulator = await startEmulator("kubernetes-emulator", ["--fast", "--token", "profile-token"]);
const kubeconfig = await readFile(emulator.kubeconfig, "utf8");

const worker = BenchWorker.fork(
  kubernetes.entrypoint,
  {
    ...(heapProbe ? { NODE_OPTIONS: `--expose-gc --import ${path.join(here, "heap-probe.js")}`, HEAP_GC: process.env.HEAP_GC ?? "1" } : {}),
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith("MALLOC_"))),
  },
);
await worker.call("initialize", initializeParams(kubernetes.manifest));
console.error(`worker pid ${worker.pid}`);

const base = { driverKey: "kubernetes", companyId: "company-1", environmentId: "env-1" };
const config = { kubeconfig, companySlug: "acme", backend: "sandbox-cr", egressMode: "cilium" };
let invocations = 0;
const invocation = () => ({ id: `profile-${++invocations}`, scope: { companyId: "company-1" } });
const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "profile" }, invocation());

/**
 * Resident KiB and mapping count per kind of mapping in /proc/<pid>/smaps, a kind being name,
 * size and permissions: V8's heap pages show up as many `[anon] 256KiB rw-p` mappings.
 */
function mappingKinds(pid) {
  const kinds = new Map();
  let kind = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const kib = (parseInt(head[2], 16) - parseInt(head[1], 16)) / 1024;
      kind = `${head[4] || "[anon]"} ${kib}KiB ${head[3]}`;
      const entry = kinds.get(kind) ?? { rssKiB: 0, count: 0 };
      entry.count += 1;
      kinds.set(kind, entry);
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && kind) kinds.get(kind).rssKiB += Number(rss[1]);
  }
  return kinds;
}

/** The kinds of mapping whose resident size changed most since `before` (SMAPS=1). */
function grownKinds(before, after, top = 5) {
  return [...after]
    .map(([kind, { rssKiB, count }]) => ({ kind, count, deltaKiB: rssKiB - (before.get(kind)?.rssKiB ?? 0) }))
    .sort((a, b) => Math.abs(b.deltaKiB) - Math.abs(a.deltaKiB))
    .slice(0, top)
    .map(({ kind, count, deltaKiB }) => `${kind} x${count}: ${deltaKiB >= 0 ? "+" : ""}${(deltaKiB / 1024).toFixed(1)} MiB`);
}

/** The next `HEAP …` line the probe writes to the worker's stderr. */
function nextHeapLine(w) {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk) => {
      text += chunk;
      const match = /^HEAP (.*)$/m.exec(text);
      if (match) {
        w.child.stderr.off("data", onData);
        resolve(match[1]);
      }
    };
    w.child.stderr.on("data", onData);
  });
}

if (heapProbe) {
  process.kill(worker.pid, "SIGUSR2");
  console.log(JSON.stringify({ start: true, rssMiB: procStatus(worker.pid).rssKiB >> 10, heap: await nextHeapLine(worker) }));
}
const startKinds = process.env.SMAPS === "1" ? mappingKinds(worker.pid) : null;
for (const { frame, total, runs } of series) {
  const script = streamScript({ total, chunk: frame });
  for (let run = 0; run < runs; run++) {
    const inv = invocation();
    let bytes = 0;
    let frames = 0;
    worker.onNotification((m) => {
      if (m.method === "execute.log" && m.paperclipInvocationId === inv.id && m.params.stream === "stdout") {
        bytes += m.params.chunk.length;
        frames += 1;
      }
    });
    resetPeakRss(worker.pid);
    const rssBefore = procStatus(worker.pid).rssKiB;
    const cpu0 = procCpuSeconds(worker.pid);
    const t0 = performance.now();
    const result = await worker.call("environmentExecute", { ...base, config, lease, command: "sh", args: ["-c", script], timeoutMs: 300_000 }, inv);
    const ms = performance.now() - t0;
    const cpu = procCpuSeconds(worker.pid) - cpu0;
    const line = {
      frame,
      run,
      mibPerSec: Number((bytes / 2 ** 20 / (ms / 1000)).toFixed(1)),
      frames,
      complete: bytes === total && result.exitCode === 0,
      rssBeforeMiB: rssBefore >> 10,
      peakRssMiB: procStatus(worker.pid).hwmKiB >> 10,
      rssAfterMiB: procStatus(worker.pid).rssKiB >> 10,
      cpuMsPerMiB: Number(((cpu * 1000) / (bytes / 2 ** 20)).toFixed(1)),
    };
    if (heapProbe) {
      process.kill(worker.pid, "SIGUSR2");
      line.heap = await nextHeapLine(worker);
    }
    if (startKinds) line.grown = grownKinds(startKinds, mappingKinds(worker.pid));
    console.log(JSON.stringify(line));
  }
}

worker.onNotification(null);
await worker.call("environmentReleaseLease", { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, invocation());
await worker.shutdown();
await emulator.stop();
