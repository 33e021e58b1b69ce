// Figure group `stall`: 200 concurrent executes spread over 50 leases, and the worst
// event-loop stall the worker itself saw meanwhile (bench/lib/stall-probe.js, preloaded into the
// worker; product code untouched). Also the wall time of the burst as the host sees it.
//
// Per worker: acquire the leases once, warm up, then bursts: reset the probe, send all executes
// at once, await every reply, read the probe. The SDK-only floor runs 200 synthetic executes.

import { stats } from "../lib/host.js";
import { log, nextInvocation, now, pool, series, startWorker } from "../lib/common.js";
import { probeDir, readProbe } from "../lib/probe.js";

/** One burst: `calls` are functions returning execute promises; all start before any is awaited. */
async function burst(worker, probeFile, calls) {
  await readProbe(worker, probeFile); // reset: the window starts here
  const startUnixMs = performance.timeOrigin + now();
  const t0 = now();
  const results = await Promise.all(calls.map((call) => call()));
  const wallMs = now() - t0;
  const probe = await readProbe(worker, probeFile);
  const failed = results.filter((r) => r?.exitCode !== 0);
  if (failed.length) throw new Error(`${failed.length} of ${results.length} executes failed, e.g. ${JSON.stringify(failed[0]).slice(0, 300)}`);
  return {
    wallMs,
    stallMaxMs: probe.stallMaxMs,
    stallP99Ms: probe.stallP99Ms,
    loopSamples: probe.samples,
    // When the worst tick came, relative to the first request being sent (drift probe).
    worstAtMs: probe.worstDriftAtUnixMs === null ? NaN : Math.max(0, probe.worstDriftAtUnixMs - startUnixMs),
  };
}

function summarize(samples, extra) {
  return {
    stallMaxMs: stats(samples.map((s) => s.stallMaxMs)),
    stallP99Ms: stats(samples.map((s) => s.stallP99Ms)),
    wallMs: stats(samples.map((s) => s.wallMs)),
    worstAtMs: stats(samples.map((s) => s.worstAtMs)),
    runs: samples.length,
    ...extra,
  };
}

/** Acquires `n` leases through `worker`, `concurrency` at a time; returns them. */
async function acquireLeases(worker, base, config, n, concurrency, tag) {
  return pool(
    Array.from({ length: n }, (_, i) => () => worker.call("environmentAcquireLease", { ...base, config, runId: `${tag}-${i}` }, nextInvocation())),
    concurrency,
  );
}

async function releaseLeases(worker, base, config, leases, concurrency) {
  await pool(
    leases.map((lease) => () =>
      worker.call("environmentReleaseLease", { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, nextInvocation()),
    ),
    concurrency,
  );
}

export async function stallFigures(ctx) {
  const { env, specs } = ctx;
  const probes = probeDir();
  ctx.cleanups.push(() => probes.remove());
  const EXECUTES = 200;
  const LEASES = 50;

  // SDK-only floor: 200 synthetic executes, no leases. Each waits 0-995 ms (5 ms apart) before
  // its 64 bytes of execute.log and its reply, so the burst spans about a second, as the
  // Kubernetes one does, instead of being over before the histogram's first tick.
  {
    log("stall: SDK-only floor, 200 concurrent synthetic executes");
    const probe = probes.options();
    const worker = await startWorker(specs.sdk, probe);
    ctx.cleanups.push(() => worker.kill());
    const calls = Array.from(
      { length: EXECUTES },
      (_, i) => () =>
        worker.call("environmentExecute", { ...env.coBase, config: env.coConfig, lease: {}, command: "synthetic", args: ["64", "64", String(i * 5)] }, nextInvocation()),
    );
    await burst(worker, probe.file, calls); // warm-up
    const samples = await series(ctx, "stall, SDK-only floor", () => burst(worker, probe.file, calls), { minRuns: ctx.runs });
    ctx.figures["stall.sdk"] = summarize(samples, { executes: EXECUTES, leases: 0 });
    await worker.shutdown();
  }

  // Kubernetes: emulator --fast; 50 leases, 4 executes of `echo` per lease in flight at once.
  {
    log(`stall: Kubernetes, acquiring ${LEASES} leases`);
    const probe = probes.options();
    const worker = await startWorker(specs.kubernetes, probe);
    ctx.cleanups.push(() => worker.kill());
    const t0 = now();
    const leases = await acquireLeases(worker, env.k8sBase, env.k8sConfig, LEASES, 10, "stall");
    const acquireMs = now() - t0;
    const exec = (lease) => () =>
      worker.call("environmentExecute", { ...env.k8sBase, config: env.k8sConfig, lease, command: "sh", args: ["-c", "echo ok"], timeoutMs: 120_000 }, nextInvocation());
    const calls = Array.from({ length: EXECUTES }, (_, i) => exec(leases[i % LEASES]));
    // Warm-up: one execute per lease, so the first burst does not also carry each lease's
    // first-use readiness check.
    await pool(leases.map((lease) => exec(lease)), 10);
    log(`stall: Kubernetes, ${EXECUTES} concurrent executes`);
    const samples = await series(ctx, "stall, Kubernetes", () => burst(worker, probe.file, calls), { minRuns: ctx.runs });
    ctx.figures["stall.kubernetes"] = summarize(samples, { executes: EXECUTES, leases: LEASES, acquireAllMs: acquireMs });
    await releaseLeases(worker, env.k8sBase, env.k8sConfig, leases, 10);
    await worker.shutdown();
  }

  // CreateOS: every request to one API origin waits its turn in a FIFO pacer 300 ms apart (as
  // the original does), so 50 acquires (5 requests each) take over a minute and 200 executes
  // about a minute: acquire once, few bursts. --quick scales down to 10 leases / 40 executes.
  {
    const leasesN = ctx.quick ? 10 : LEASES;
    const executesN = ctx.quick ? 40 : EXECUTES;
    const runs = ctx.quick ? 1 : (ctx.createosStallRuns ?? 1);
    log(`stall: CreateOS, acquiring ${leasesN} leases (paced, ~${Math.round((leasesN * 5 * 0.3))} s)`);
    const probe = probes.options();
    const worker = await startWorker(specs.createos, probe);
    ctx.cleanups.push(() => worker.kill());
    const t0 = now();
    // One at a time: concurrent acquires would only interleave in the pacer's queue, and each
    // acquire's readiness wait would then also wait behind everyone else's requests.
    const leases = await acquireLeases(worker, env.coBase, env.coConfig, leasesN, 1, "stall");
    const acquireMs = now() - t0;
    const exec = (lease) => () =>
      worker.call(
        "environmentExecute",
        { ...env.coBase, config: env.coConfig, lease, command: "bash", args: ["-c", "echo ok"], cwd: "/paperclip-workspace", timeoutMs: 300_000 },
        nextInvocation(),
      );
    const calls = Array.from({ length: executesN }, (_, i) => exec(leases[i % leasesN]));
    log(`stall: CreateOS, ${executesN} concurrent executes (paced, ~${Math.round(executesN * 0.3)} s per burst)`);
    const samples = [];
    for (let i = 0; i < runs; i++) samples.push(await burst(worker, probe.file, calls));
    ctx.figures["stall.createos"] = summarize(samples, { executes: executesN, leases: leasesN, acquireAllMs: acquireMs });
    ctx.notes.push(
      `stall, CreateOS: ${leasesN} leases acquired one after another (${(acquireMs / 1000).toFixed(0)} s, pacer-bound), then ${runs} burst(s) of ${executesN} concurrent executes with no warm-up: the pacer spaces requests to one API origin 300 ms apart, so one burst takes ~${Math.round(executesN * 0.3)} s and its wall time is the pacer's, not the worker's`,
    );
    const r0 = now();
    await releaseLeases(worker, env.coBase, env.coConfig, leases, leasesN);
    log(`stall: CreateOS, released ${leasesN} leases in ${((now() - r0) / 1000).toFixed(1)} s`);
    await worker.shutdown();
  }

  ctx.notes.push(
    "stall: the worst event-loop stall is measured inside the worker by a preload (bench/lib/stall-probe.js via the fork's `--import`, product code unchanged): `perf_hooks.monitorEventLoopDelay({resolution: 2})`, reset when the burst starts and read when the last reply has arrived (SIGUSR2 -> one JSON line in a file); stall = histogram max (or p99) minus the 2 ms resolution. Wall time = first request sent -> last reply received.",
    "stall, Kubernetes: 50 leases on the emulator (`--fast`), one warm-up execute per lease, then each burst sends 200 `sh -c 'echo ok'` executes (4 per lease) at once. SDK-only floor: 200 synthetic executes at once, each answering after 0-995 ms (5 ms apart) with 64 bytes of execute.log. 'Worst stall ended at' is when the most-delayed tick of a setInterval drift probe in the same preload fired, in ms after the first request was sent: near 0 means the burst of incoming requests itself stalls the loop. The SDK-only floor's own worst stall is the noise level of this shared 2-core machine (other processes, the bench host itself); a native worker's stall well above it is the worker's.",
  );
}
