// Kubernetes sync in and out through a forked worker against the local emulator, with a local
// `tar c | tar x` floor run right before each sync run (as the bench's sync figure does):
//   node bench/profile/sync.js [runs] [files] [MiB]
// Prints one line per run (ms of the floor and of the sync) and the medians. Set
// NAPI_RS_NATIVE_LIBRARY_PATH to measure another build of the addon; `perf record -a` beside it
// shows where the time goes.

import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { startEmulator } from "../../lib/emulators.js";
import { nextInvocation, now, startWorker, workerSpecs } from "../lib/common.js";
import { generateTree } from "../lib/tree.js";

const run = promisify(execFile);
const [runs = 4, files = 10_000, mib = 100] = process.argv.slice(2).map(Number);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const tree = await generateTree({ files, dirs: Math.max(1, files / 100), bytes: mib * 1024 * 1024 });
const scratch = await mkdtemp(path.join(tmpdir(), "paperclip-profile-sync-"));
const emu = await startEmulator("kubernetes-emulator", ["--fast", "--token", "bench-token"]);
const config = { kubeconfig: await readFile(emu.kubeconfig, "utf8"), companySlug: "acme", backend: "sandbox-cr", egressMode: "cilium" };
const base = { driverKey: "kubernetes", companyId: "company-1", environmentId: "env-1" };
const worker = await startWorker((await workerSpecs()).kubernetes);
let seq = 0;
const floor = async () => {
  const target = path.join(scratch, `floor-${++seq}`);
  await mkdir(target);
  await run("sync");
  const t0 = now();
  await run("sh", ["-c", 'tar cf - -C "$1" . | tar xf - -C "$2"', "sh", tree.root, target]);
  const ms = now() - t0;
  await rm(target, { recursive: true, force: true });
  return ms;
};
const timed = async (method, params) => {
  await run("sync");
  const t0 = now();
  await worker.call(method, params, nextInvocation());
  return now() - t0;
};
try {
  const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "profile" }, nextInvocation());
  const workspaceLease = { ...lease, metadata: { ...lease.metadata, remoteCwd: "/workspace" } };
  const op = (sourcePath, targetPath) => ({ ...base, config, lease: workspaceLease, operations: [{ operationId: "p", files: [{ sourcePath, targetPath, kind: "directory" }] }] });
  await worker.call("environmentSyncIn", op(tree.root, "/workspace/tree"), nextInvocation());
  await floor();
  const rows = { floor: [], in: [], out: [] };
  for (let i = 1; i <= runs; i++) {
    rows.floor.push(await floor());
    rows.in.push(await timed("environmentSyncIn", op(tree.root, `/workspace/in-${i}`)));
    await worker.call("environmentExecute", { ...base, config, lease: workspaceLease, command: "rm", args: ["-rf", `/workspace/in-${i}`], timeoutMs: 120_000 }, nextInvocation());
    rows.floor.push(await floor());
    const out = path.join(scratch, `out-${i}`);
    rows.out.push(await timed("environmentSyncOut", op("/workspace/tree", out)));
    await rm(out, { recursive: true, force: true });
    console.log(`run ${i}: floor ${rows.floor.slice(-2).map((m) => m.toFixed(0)).join("/")} ms, in ${rows.in.at(-1).toFixed(0)} ms, out ${rows.out.at(-1).toFixed(0)} ms`);
  }
  const f = median(rows.floor);
  console.log(`medians: floor ${f.toFixed(0)} ms, in ${median(rows.in).toFixed(0)} ms (${(f / median(rows.in)).toFixed(2)}x), out ${median(rows.out).toFixed(0)} ms (${(f / median(rows.out)).toFixed(2)}x)`);
} finally {
  await worker.shutdown().catch(() => {});
  await emu.stop?.();
  await rm(scratch, { recursive: true, force: true });
  await tree.remove();
}
