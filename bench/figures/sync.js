// Figure group `sync`: a generated workspace tree (100 MiB in 10,000 files; --quick: 10 MiB in
// 1,000) synced into a sandbox and back out through each plugin worker's `environmentSyncIn` /
// `environmentSyncOut` (one directory mapping, as the host sends it), in MiB/s of file content,
// next to a local `tar c | tar x` pipe of the same tree as the floor.
//
// Each provider's first round trip is checked (sync in, sync out to a fresh dir, compare file
// count and total bytes with the tree) before any speed is measured, so a broken sync cannot
// report a speed.

import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { log, MiB, nextInvocation, now, removeOnExit, series, sleep, startWorker } from "../lib/common.js";
import { procStatus, resetPeakRss, stats } from "../lib/host.js";
import { rssSampler } from "../lib/stream.js";
import { countFiles, generateTree } from "../lib/tree.js";

const run = promisify(execFile);

/**
 * Writes back dirty pages (sync(1)) before each timed run, untimed. Without it every run pays
 * for the previous run's 100 MiB of writes (the kernel throttles whoever writes next while
 * dirty pages drain), and a local tar pipe then measured anywhere from 0.4 to 5 s on this VM.
 */
const flushDirty = () => run("sync");

/** The floor: `tar c | tar x` of the tree into a fresh directory on this machine. */
async function floorOnce(tree, scratch) {
  const target = path.join(scratch, `floor-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  await mkdir(target);
  await flushDirty();
  const t0 = now();
  await run("sh", ["-c", 'tar cf - -C "$1" . | tar xf - -C "$2"', "sh", tree.root, target]);
  const ms = now() - t0;
  await rm(target, { recursive: true, force: true });
  return { ms, mibPerSec: tree.bytes / MiB / (ms / 1000) };
}

/** One timed sync call: MiB/s of tree content, the archive bytes the worker reports, peak RSS. */
async function syncOnce(worker, method, params, treeBytes) {
  await flushDirty();
  const canReset = resetPeakRss(worker.pid);
  const stopSampler = rssSampler(worker.pid);
  const t0 = now();
  const result = await worker.call(method, params, nextInvocation());
  const ms = now() - t0;
  const sampled = stopSampler();
  const peakKiB = canReset ? Math.max(procStatus(worker.pid).hwmKiB, sampled) : sampled;
  const op = result?.operations?.[0];
  return { ms, mibPerSec: treeBytes / MiB / (ms / 1000), archiveBytes: op?.bytesTransferred ?? NaN, filesTransferred: op?.filesTransferred ?? NaN, peakRssMiB: peakKiB / 1024 };
}

function summarize(samples, tree) {
  return {
    mibPerSec: stats(samples.map((s) => s.mibPerSec)),
    ms: stats(samples.map((s) => s.ms)),
    peakRssMiB: stats(samples.map((s) => s.peakRssMiB)),
    archiveBytes: samples[0]?.archiveBytes ?? NaN,
    filesTransferred: samples[0]?.filesTransferred ?? NaN,
    runs: samples.length,
    tree: { files: tree.files, dirs: tree.dirs, bytes: tree.bytes },
  };
}

/**
 * One provider: acquire, realize the workspace (as the host does before syncing), check one
 * round trip, then timed series of sync in and sync out, then release.
 */
async function providerSync(ctx, key, tree, scratch, floorSamples) {
  const { env, specs } = ctx;
  const createos = key === "createos";
  const base = createos ? env.coBase : env.k8sBase;
  const config = createos ? env.coConfig : env.k8sConfig;
  // CreateOS paces requests to one API origin 300 ms apart; an untimed pause before each run
  // keeps one run's pacing from spilling into the next (as the stream figures do).
  const pause = createos ? () => sleep(320) : async () => {};
  const worker = await startWorker(specs[key]);
  ctx.cleanups.push(() => worker.kill());
  const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "sync" }, nextInvocation());
  try {
    await pause();
    const realized = await worker.call("environmentRealizeWorkspace", { ...base, config, lease, workspace: {} }, nextInvocation());
    const workspaceLease = { ...lease, metadata: { ...lease.metadata, remoteCwd: realized.metadata?.remoteCwd ?? realized.cwd } };
    const remoteDir = path.posix.join(realized.cwd, "bench-sync");
    const inParamsTo = (target) => ({
      ...base,
      config,
      lease: workspaceLease,
      operations: [{ operationId: "bench-sync-in", files: [{ sourcePath: tree.root, targetPath: target, kind: "directory" }] }],
    });
    const inParams = inParamsTo(remoteDir);
    // Each timed sync in unpacks into a fresh sandbox directory that is removed afterwards,
    // untimed, exactly as the floor's `tar x` does on the host (see the note below).
    let inSeq = 0;
    const removeRemote = async (dir) => {
      await pause();
      const result = await worker.call(
        "environmentExecute",
        { ...base, config, lease: workspaceLease, command: "rm", args: ["-rf", dir], timeoutMs: 120_000 },
        nextInvocation(),
      );
      if (result?.exitCode !== 0) throw new Error(`removing ${dir} in the sandbox failed: ${JSON.stringify(result).slice(0, 300)}`);
    };
    let outSeq = 0;
    const outParams = () => ({
      ...base,
      config,
      lease: workspaceLease,
      operations: [
        { operationId: "bench-sync-out", files: [{ sourcePath: remoteDir, targetPath: path.join(scratch, `${key}-out-${++outSeq}`), kind: "directory" }] },
      ],
    });

    // Round-trip check, untimed.
    log(`sync: ${key}, round-trip check`);
    await pause();
    await worker.call("environmentSyncIn", inParams, nextInvocation());
    await pause();
    const checkOut = outParams();
    await worker.call("environmentSyncOut", checkOut, nextInvocation());
    const back = await countFiles(checkOut.operations[0].files[0].targetPath);
    await rm(checkOut.operations[0].files[0].targetPath, { recursive: true, force: true });
    const ok = back.files === tree.files && back.bytes === tree.bytes;
    ctx.figures[`sync.check.${key}`] = { ok, files: back.files, bytes: back.bytes, expectedFiles: tree.files, expectedBytes: tree.bytes };
    if (!ok) throw new Error(`round trip MISMATCH (${back.files} files / ${back.bytes} bytes back, ${tree.files} / ${tree.bytes} sent): no speed reported`);

    // Every run is taken (at least 10 per figure), however long they take.
    const allRuns = { minRuns: ctx.runs };
    log(`sync: ${key}, sync in`);
    const inSamples = await series(
      ctx,
      `sync in, ${key}`,
      async () => {
        const target = `${remoteDir}-in-${++inSeq}`;
        floorSamples.push(await floorOnce(tree, scratch));
        await pause();
        const sample = await syncOnce(worker, "environmentSyncIn", inParamsTo(target), tree.bytes);
        await removeRemote(target);
        return sample;
      },
      allRuns,
    );
    ctx.figures[`sync.in.${key}`] = summarize(inSamples, tree);
    log(`sync: ${key}, sync out`);
    const outSamples = await series(
      ctx,
      `sync out, ${key}`,
      async () => {
        floorSamples.push(await floorOnce(tree, scratch));
        await pause();
        const params = outParams();
        const sample = await syncOnce(worker, "environmentSyncOut", params, tree.bytes);
        await rm(params.operations[0].files[0].targetPath, { recursive: true, force: true });
        return sample;
      },
      allRuns,
    );
    ctx.figures[`sync.out.${key}`] = summarize(outSamples, tree);
  } finally {
    await pause();
    await worker.call(
      "environmentReleaseLease",
      { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata },
      nextInvocation(),
    );
    await worker.shutdown();
  }
}

export async function syncFigures(ctx) {
  const t0 = now();
  const tree = await generateTree(ctx.syncTree);
  const scratch = await mkdtemp(path.join(tmpdir(), "paperclip-bench-sync-"));
  const scratchOnExit = removeOnExit(scratch);
  log(`sync: generated ${tree.files} files / ${(tree.bytes / MiB).toFixed(0)} MiB in ${((now() - t0) / 1000).toFixed(1)} s`);
  ctx.notes.push(
    `sync: one directory mapping per call (the tree's root -> \`<workspace cwd>/bench-sync\` in the sandbox, and back into a fresh local directory per run); MiB/s counts the tree's ${(tree.bytes / MiB).toFixed(0)} MiB of file content, not the tar archive the worker reports as bytesTransferred (headers and padding add to it); each timed sync in unpacks into a fresh sandbox directory (\`bench-sync-in-<n>\`), removed after the run, untimed, as the floor's \`tar x\` into a fresh host directory is; sync out reads the tree the check put in \`bench-sync\`. The tree is generated once per run from a fixed seed (mixed sizes, random content) in a temp dir and removed at the end; one untimed round trip per provider first checks that file count and total bytes come back intact`,
    "sync, CreateOS: each call is several paced API requests (upload or download, a transfer exec, a cleanup exec), 300 ms apart per origin, so the pacer bounds the rate as much as the bytes do; every run starts after an untimed 320 ms pause. Kubernetes: one tar stream over the emulator's pod exec websocket per call",
    "sync, CreateOS: the provider uploads a directory as one tar in one PUT, which the emulator's default 64 MiB request-body limit refuses (HTTP 413) for the full-size tree's ~108 MiB archive, so the bench starts the CreateOS emulator with `--max-body-bytes` 1 GiB (what the real API accepts is not in our reference)",
    "sync floor: `tar cf - -C tree . | tar xf - -C fresh_dir` on this machine's disk, page cache warm (after one untimed pass); the fresh directory is removed after each run, untimed. One floor run goes right before every timed sync run (of both providers, both directions), and the floor figure is over all of them: run as a series of its own before the workers, it met a file system with fewer recently freed inodes than the sync runs after it, and swung 28-433 MiB/s in one series",
    "sync: every side unpacks into a fresh directory that is removed after the run, untimed (floor, sync in in the sandbox, sync out on the host). Overwriting one directory again and again measures ext4, not the sync: each run unlinks 10,000 files and creates 10,000 more next to them, and ext4's inode allocator skips every inode freed in the last 5-10 minutes (`recently_deleted` under `__ext4_new_inode`: over 60 % of a `tar x`'s samples in `perf` here), so each run in the same place was slower than the last (sync in 21-30 s per call where the floor took 3-6 s)",
    "sync: every timed run (floor and workers) starts after an untimed `sync` (write back dirty pages): otherwise each run pays for the previous run's 100 MiB of writes through the kernel's dirty-page throttling, which made the same tar pipe take 0.4-5 s",
  );
  try {
    log("sync: floor, local tar c | tar x");
    await floorOnce(tree, scratch); // warm the page cache, as the workers' first (check) round does
    // One floor run right before every timed sync run, so the floor meets the file system in
    // the state the sync runs meet it (see the note above).
    const floor = [];
    const floorFigure = () => {
      ctx.figures["sync.floor"] = {
        mibPerSec: stats(floor.map((s) => s.mibPerSec)),
        ms: stats(floor.map((s) => s.ms)),
        runs: floor.length,
        tree: { files: tree.files, dirs: tree.dirs, bytes: tree.bytes },
      };
    };
    const failed = [];
    for (const key of ["createos", "kubernetes"]) {
      try {
        await providerSync(ctx, key, tree, scratch, floor);
        floorFigure();
      } catch (error) {
        // One provider's failure must not cost the other's figures; the group still fails
        // at the end (below), so the run exits non-zero.
        log(`sync: ${key} FAILED: ${error.stack ?? error}`);
        ctx.notes.push(`sync, ${key}: FAILED (${String(error.message ?? error).slice(0, 300)})`);
        failed.push(key);
      }
    }
    floorFigure();
    if (failed.length) throw new Error(`sync failed for ${failed.join(", ")} (see the notes above)`);
  } finally {
    await rm(scratch, { recursive: true, force: true });
    scratchOnExit.forget();
    await tree.remove();
  }
}
