// Streaming helpers shared by the `stream` figure group: one streamed execute through a worker
// (MiB/s, peak RSS, CPU per MiB of worker / server / host), a raw HTTP client reading a
// server's NDJSON exec stream alone (the ceiling), the frame server, and the CreateOS
// emulator's request log.

import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { MiB, nextInvocation, now } from "./common.js";
import { procCpuSeconds, procStatus, resetPeakRss, stats } from "./host.js";

const here = path.dirname(fileURLToPath(import.meta.url));

/** Samples VmRSS every 20 ms as a fallback peak when VmHWM cannot be reset. */
export function rssSampler(pid) {
  let peak = 0;
  const tick = () => {
    try {
      peak = Math.max(peak, procStatus(pid).rssKiB);
    } catch {
      // gone
    }
  };
  tick();
  const timer = setInterval(tick, 20);
  return () => {
    clearInterval(timer);
    tick();
    return peak;
  };
}

/**
 * One streamed execute through `worker`: MiB/s as the host sees it (request sent -> reply
 * received, counting stdout bytes delivered as `execute.log`), the worker's peak RSS, the
 * number of execute.log notifications, and the time to the first one.
 */
export async function streamOnce(worker, params, expectBytes, serverPid = null) {
  const inv = nextInvocation();
  let bytes = 0;
  let frames = 0;
  let firstChunkAt = NaN;
  worker.onNotification((message) => {
    if (message.method === "execute.log" && message.paperclipInvocationId === inv.id && message.params.stream === "stdout") {
      if (frames === 0) firstChunkAt = now();
      bytes += message.params.chunk.length;
      frames += 1;
    }
  });
  const rssBeforeKiB = procStatus(worker.pid).rssKiB;
  const canReset = resetPeakRss(worker.pid);
  const stopSampler = rssSampler(worker.pid);
  const cpu0 = procCpuSeconds(worker.pid);
  const serverCpu0 = serverPid ? procCpuSeconds(serverPid) : NaN;
  const hostCpu0 = process.cpuUsage();
  const t0 = now();
  const result = await worker.call("environmentExecute", params, inv);
  const elapsed = now() - t0;
  const workerCpuS = procCpuSeconds(worker.pid) - cpu0;
  const serverCpuS = serverPid ? procCpuSeconds(serverPid) - serverCpu0 : NaN;
  const hostCpu = process.cpuUsage(hostCpu0);
  const sampledPeak = stopSampler();
  const peakKiB = canReset ? Math.max(procStatus(worker.pid).hwmKiB, sampledPeak) : sampledPeak;
  worker.onNotification(null);
  if (bytes !== expectBytes) {
    throw new Error(`streamed ${bytes} bytes, expected ${expectBytes} (exit ${result?.exitCode}, stderr ${String(result?.stderr).slice(0, 300)})`);
  }
  return {
    mibPerSec: bytes / MiB / (elapsed / 1000),
    peakRssMiB: peakKiB / 1024,
    rssBeforeMiB: rssBeforeKiB / 1024,
    frames,
    ms: elapsed,
    // Request sent -> first stdout chunk received: what batching must not delay.
    firstChunkMs: firstChunkAt - t0,
    // CPU seconds per MiB streamed: who is busy (the worker, the server, the bench host)?
    workerCpuMsPerMiB: (workerCpuS * 1000) / (bytes / MiB),
    serverCpuMsPerMiB: (serverCpuS * 1000) / (bytes / MiB),
    hostCpuMsPerMiB: ((hostCpu.user + hostCpu.system) / 1000) / (bytes / MiB),
  };
}

export function summarizeStream(samples) {
  return {
    workerCpuMsPerMiB: stats(samples.map((s) => s.workerCpuMsPerMiB)),
    serverCpuMsPerMiB: stats(samples.map((s) => s.serverCpuMsPerMiB)),
    hostCpuMsPerMiB: stats(samples.map((s) => s.hostCpuMsPerMiB)),
    mibPerSec: stats(samples.map((s) => s.mibPerSec)),
    peakRssMiB: stats(samples.map((s) => s.peakRssMiB)),
    rssBeforeMiB: stats(samples.map((s) => s.rssBeforeMiB)),
    framesPerRun: stats(samples.map((s) => s.frames)),
    firstChunkMs: stats(samples.map((s) => s.firstChunkMs)),
    runs: samples.length,
  };
}

export const streamScript = ({ total, chunk }) => `head -c ${total} /dev/zero | tr '\\0' a | dd bs=${chunk} iflag=fullblock status=none`;

/**
 * A server alone (the CreateOS emulator, or the frame server): a raw HTTP client reading the
 * NDJSON exec stream and parsing each frame, with no worker in between.
 */
export async function rawStreamOnce(url, apiKey, sandboxId, stream, script) {
  const t0 = now();
  const response = await fetch(`${url}/v1/sandboxes/${sandboxId}/exec?stream=true`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: JSON.stringify({ cmd: "bash", args: ["-c", script], stream: true }),
  });
  if (!response.ok) throw new Error(`raw exec: HTTP ${response.status} ${await response.text()}`);
  let bytes = 0;
  let frames = 0;
  let pending = "";
  const decoder = new TextDecoder();
  for await (const piece of response.body) {
    pending += decoder.decode(piece, { stream: true });
    let start = 0;
    let nl;
    while ((nl = pending.indexOf("\n", start)) !== -1) {
      const frame = JSON.parse(pending.slice(start, nl));
      start = nl + 1;
      if (typeof frame.stdout === "string") {
        bytes += frame.stdout.length;
        frames += 1;
      }
    }
    pending = pending.slice(start);
  }
  const elapsed = now() - t0;
  if (bytes !== stream.total) throw new Error(`raw stream: ${bytes} bytes, expected ${stream.total}`);
  return { mibPerSec: bytes / MiB / (elapsed / 1000), peakRssMiB: NaN, frames, ms: elapsed };
}

/** The CreateOS emulator's request log (control API): the last seq, and the requests after one. */
export async function emulatorRequests(emulator, since = 0) {
  const body = await (await fetch(`${emulator.controlUrl}/requests?since=${since}`)).json();
  return body.requests.filter((r) => r.seq > since);
}
export async function emulatorRequestSeq(emulator) {
  const all = await emulatorRequests(emulator);
  return all.length ? all.at(-1).seq : 0;
}

export const frameScript = ({ total, chunk }) => `echo BENCH_FRAMES ${total} ${chunk}`;

/** Starts bench/lib/frame-server.js as its own process; resolves with {url, stop}. */
export async function startFrameServer() {
  const child = spawn(process.execPath, [path.join(here, "frame-server.js")], { stdio: ["pipe", "pipe", "inherit"] });
  const [line] = await (async () => {
    for await (const l of createInterface({ input: child.stdout })) return [l];
    throw new Error("frame server exited before listening");
  })();
  const { url } = JSON.parse(line);
  return {
    url,
    pid: child.pid,
    async stop() {
      child.stdin.end();
      if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}
