#!/usr/bin/env node
// Profiling driver: streamed executes through a forked CreateOS worker, as the host sees them,
// repeated so a profiler can attach to the worker (its pid is printed first, on stderr).
//
//   node bench/profile/stream.js [frameBytes=65536] [totalBytes=67108864] [runs=5]
//
// Env: SOURCE=emulator streams the real command from the CreateOS emulator (<= 16 KiB frames)
// instead of the frame server (exact frame sizes); SOURCE=sdk runs the SDK-only floor worker
// (bench/floors/sdk-worker.js, synthetic chunks of the same sizes) instead; HEAP=1 preloads bench/profile/heap-probe.js
// and prints the worker's memory after a GC at the end of each run (HEAP_GC=0: as it is, without the
// GC, with V8's space sizes: what the next run starts with).
// Profile:  perf record -g -p <pid> -- sleep 8      (while it runs)
// Each run prints one JSON line: MiB/s, frames, worker RSS before / peak, worker CPU ms per MiB.

import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { startEmulator } from "../../lib/emulators.js";
import { BenchWorker, initializeParams, pluginEntry, procCpuSeconds, procStatus, resetPeakRss } from "../lib/host.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const [frame = 65536, total = 64 * 1024 * 1024, runs = 5] = process.argv.slice(2).map(Number);
const fromEmulator = process.env.SOURCE === "emulator";
const floor = process.env.SOURCE === "sdk";
const heapProbe = process.env.HEAP === "1";

const createos = await pluginEntry("createos");
const emulator = await startEmulator("createos-emulator", ["--api-key", "profile-key", "--transition-ms", "20"]);
const frameServer = spawn(process.execPath, [path.join(here, "../lib/frame-server.js")], { stdio: ["pipe", "pipe", "inherit"] });
const frameServerUrl = JSON.parse(await new Promise((resolve) => createInterface({ input: frameServer.stdout }).once("line", resolve))).url;

const worker = BenchWorker.fork(
  floor ? path.join(here, "../floors/sdk-worker.js") : createos.entrypoint,
  heapProbe ? { NODE_OPTIONS: `--expose-gc --import ${path.join(here, "heap-probe.js")}`, HEAP_GC: process.env.HEAP_GC ?? "1" } : {},
);
await worker.call("initialize", initializeParams(createos.manifest));
console.error(`worker pid ${worker.pid}`);

const base = { driverKey: "createos", companyId: "company-1", environmentId: "env-1" };
const config = { apiUrl: emulator.url, apiKey: "profile-key", shape: "s-1vcpu-1gb" };
let invocations = 0;
const invocation = () => ({ id: `profile-${++invocations}`, scope: { companyId: "company-1" } });
const lease = floor ? { providerLeaseId: "floor", metadata: {} } : await worker.call("environmentAcquireLease", { ...base, config, runId: "profile" }, invocation());
// A frame-server lease is the same lease pointed at the frame server.
const source = fromEmulator
  ? { config, lease, script: `head -c ${total} /dev/zero | tr '\\0' a | dd bs=${frame} iflag=fullblock status=none` }
  : {
      config: { ...config, apiUrl: frameServerUrl },
      lease: { ...lease, metadata: { ...lease.metadata, apiUrl: frameServerUrl } },
      script: `echo BENCH_FRAMES ${total} ${frame}`,
    };

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

for (let run = 0; run < runs; run++) {
  // The provider spaces requests to one API origin 300 ms apart; start each run after that.
  await new Promise((resolve) => setTimeout(resolve, 320));
  const inv = invocation();
  let bytes = 0;
  let frames = 0;
  worker.onNotification((m) => {
    if (m.method === "execute.log" && m.paperclipInvocationId === inv.id) {
      bytes += m.params.chunk.length;
      frames += 1;
    }
  });
  resetPeakRss(worker.pid);
  const rssBefore = procStatus(worker.pid).rssKiB;
  const cpu0 = procCpuSeconds(worker.pid);
  const t0 = performance.now();
  const params = floor
    ? { ...base, config, lease: {}, command: "synthetic", args: [String(total), String(frame)] }
    : { ...base, config: source.config, lease: source.lease, command: "bash", args: ["-c", source.script], cwd: "/paperclip-workspace", timeoutMs: 300_000 };
  const result = await worker.call("environmentExecute", params, inv);
  const ms = performance.now() - t0;
  const cpu = procCpuSeconds(worker.pid) - cpu0;
  const line = {
    run,
    mibPerSec: Number((bytes / 2 ** 20 / (ms / 1000)).toFixed(1)),
    frames,
    complete: bytes === total && result.exitCode === 0,
    rssBeforeMiB: rssBefore >> 10,
    peakRssMiB: procStatus(worker.pid).hwmKiB >> 10,
    cpuMsPerMiB: Number(((cpu * 1000) / (bytes / 2 ** 20)).toFixed(1)),
  };
  if (heapProbe) {
    process.kill(worker.pid, "SIGUSR2");
    line.heap = await nextHeapLine(worker);
  }
  console.log(JSON.stringify(line));
}

worker.onNotification(null);
if (!floor) await worker.call("environmentReleaseLease", { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, invocation());
await worker.shutdown();
frameServer.stdin.end();
await emulator.stop();
