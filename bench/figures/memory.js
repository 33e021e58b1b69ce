// Figure group `memory`: RSS growth of each worker over 10,000 hook calls (--quick: 2,000),
// after a warm-up of 500. A leak of a few hundred bytes per call shows here as MiB.
//
// The workers get the probe preload (bench/lib/stall-probe.js) plus --expose-gc, so the probe
// can run a full GC right before it samples RSS and heap: without it the numbers mostly show
// when V8 last happened to collect. /proc VmRSS read just before the probe (no forced GC) is
// reported too. Product code is untouched; only the bench's fork passes these flags.

import { log, nextInvocation, pool, startWorker } from "../lib/common.js";
import { procStatus } from "../lib/host.js";
import { probeDir, readProbe } from "../lib/probe.js";

const IN_FLIGHT = 4;

/**
 * The call mix per worker: mostly validate and health (which make no API call in either
 * provider), plus executes where they are cheap. CreateOS executes wait for the 300 ms request
 * pacer, so it gets one execute per 1,000 calls; Kubernetes (emulator --fast) one per 50.
 */
function mixFor(key, { worker, env, lease }) {
  const base = key === "kubernetes" ? env.k8sBase : env.coBase;
  const config = key === "kubernetes" ? env.k8sConfig : env.coConfig;
  const validate = () => worker.call("environmentValidateConfig", env.validateParams[key]);
  const health = () => worker.call("health", {});
  const execute = {
    bare: null,
    sdk: () => worker.call("environmentExecute", { ...base, config, lease: {}, command: "synthetic", args: ["1024", "1024"] }, nextInvocation()),
    kubernetes: () =>
      worker.call("environmentExecute", { ...base, config, lease, command: "sh", args: ["-c", "echo ok"], timeoutMs: 120_000 }, nextInvocation()),
    createos: () =>
      worker.call(
        "environmentExecute",
        { ...base, config, lease, command: "bash", args: ["-c", "echo ok"], cwd: "/paperclip-workspace", timeoutMs: 300_000 },
        nextInvocation(),
      ),
  }[key];
  const executeEvery = { bare: 0, sdk: 50, kubernetes: 50, createos: 1000 }[key];
  return (i) => {
    if (execute && i % executeEvery === 0) return ["execute", execute];
    if (i % 5 === 4) return ["health", health];
    return ["validate", validate];
  };
}

/** Runs calls [from, to) of the mix, IN_FLIGHT at a time; counts them by kind. */
async function drive(mix, from, to, counts) {
  await pool(
    Array.from({ length: to - from }, (_, j) => async () => {
      const [kind, call] = mix(from + j);
      const result = await call();
      if (kind === "execute" && result?.exitCode !== 0) throw new Error(`execute failed: ${JSON.stringify(result).slice(0, 300)}`);
      if (counts) counts[kind] = (counts[kind] ?? 0) + 1;
    }),
    IN_FLIGHT,
  );
}

export async function memoryFigures(ctx) {
  const { env, specs } = ctx;
  const { warmup, measured } = ctx.memoryCalls;
  const probes = probeDir();
  ctx.cleanups.push(() => probes.remove());
  const MiBytes = 1024 * 1024;
  for (const key of ["bare", "sdk", "kubernetes", "createos"]) {
    log(`memory: ${key}, ${warmup} + ${measured} calls`);
    const probe = probes.options({ gc: true });
    const worker = await startWorker(specs[key], probe);
    ctx.cleanups.push(() => worker.kill());
    let lease = null;
    const base = key === "kubernetes" ? env.k8sBase : env.coBase;
    const config = key === "kubernetes" ? env.k8sConfig : env.coConfig;
    try {
      if (key === "kubernetes" || key === "createos") {
        lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "memory" }, nextInvocation());
      }
      const mix = mixFor(key, { worker, env, lease });
      await drive(mix, 0, warmup);
      const procBefore = procStatus(worker.pid).rssKiB;
      const before = await readProbe(worker, probe.file);
      const counts = {};
      // A checkpoint halfway: growth that continues through the second half is a leak; growth
      // only in the first half is the worker settling (JIT, buffers, allocator arenas).
      const half = Math.floor(measured / 2);
      await drive(mix, warmup, warmup + half, counts);
      const mid = await readProbe(worker, probe.file);
      await drive(mix, warmup + half, warmup + measured, counts);
      const procAfter = procStatus(worker.pid).rssKiB;
      const after = await readProbe(worker, probe.file);
      const growth = (after.rssBytes - before.rssBytes) / MiBytes;
      ctx.figures[`memory.${key}`] = {
        calls: { warmup, measured },
        counts,
        mix: Object.entries(counts)
          .map(([kind, n]) => `${kind} ${n.toLocaleString("en-US")}`)
          .join(", "),
        rssWarmMiB: before.rssBytes / MiBytes,
        rssEndMiB: after.rssBytes / MiBytes,
        growthMiB: growth,
        kibPer1000Calls: (growth * 1024) / (measured / 1000),
        rssMidMiB: mid.rssBytes / MiBytes,
        secondHalfKibPer1000Calls: ((after.rssBytes - mid.rssBytes) / 1024) / ((measured - half) / 1000),
        heapGrowthMiB: (after.heapUsedBytes - before.heapUsedBytes) / MiBytes,
        externalGrowthMiB: (after.externalBytes - before.externalBytes) / MiBytes,
        procRssGrowthMiB: (procAfter - procBefore) / 1024,
      };
    } finally {
      if (lease) {
        await worker.call(
          "environmentReleaseLease",
          { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata },
          nextInvocation(),
        );
      }
      await worker.shutdown();
    }
  }
  ctx.notes.push(
    `memory: per worker, ${warmup} warm-up calls, then ${measured.toLocaleString("en-US")} calls, ${IN_FLIGHT} in flight; RSS, heap used and external memory are sampled by the probe preload right after \`gc()\` (the bench passes \`--expose-gc\` with the preload to these workers only; the plugins never see it); the /proc VmRSS column is read just before the probe, without a forced GC. Mix: validate, and every 5th call \`health\` (neither makes an API call); executes of \`echo ok\` on one acquired lease: every 50th call on Kubernetes (emulator --fast), every 1,000th on CreateOS (each waits for the 300 ms request pacer); the SDK-only floor's executes are synthetic (1 KiB of execute.log); the bare worker has no execute`,
  );
}
