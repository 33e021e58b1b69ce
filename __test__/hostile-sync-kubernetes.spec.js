// A hostile sandbox against the host, through the real forked Kubernetes worker and the local
// Kubernetes API emulator: a root agent in the pod builds trees meant to escape the sync-out
// destination (a link named `x -> y`, a chain of links confined only as text) and, having
// replaced the pod's archiver (here: the emulator's `/bin/sh` override, a wrapper that answers
// the sync-out script with an archive the agent forged), a hard link to a host file. Each
// sync-out is refused with the contract's message, and nothing outside the destination changes.

import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { ForkedWorker } from "../lib/forked-worker.js";
import { snapshot, ustarHeader } from "./support/hostile-tree.js";

const FORGED = "/workspace/.forged.tar";
// Run for every `/bin/sh` exec of the pods: a sync-out script (it ends in `tar -c --no-xattrs`)
// gets the forged archive when the agent left one; everything else runs as it came.
const HOSTILE_SH = `case "$2" in *"tar -c --no-xattrs"*) if [ -f ${FORGED} ]; then cat ${FORGED}; exit 0; fi ;; esac; exec /bin/sh "$@"`;
const ESCAPING_LINK = "Kubernetes syncOut refusing tarball link whose target escapes the extraction dir: ";

/** A file `a`, then a hard link `h` to `target` (a host path, not a member of the archive). */
function forgedArchive(target) {
  const body = Buffer.alloc(512);
  body.write("a\n");
  return Buffer.concat([ustarHeader({ name: "a", type: "0", size: 2 }), body, ustarHeader({ name: "h", type: "1", link: target }), Buffer.alloc(1024)]);
}

async function isEmptyOrAbsent(dir) {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if (err.code === "ENOENT") return true;
    throw err;
  }
}

describe("Kubernetes sync-out from a hostile sandbox, through a forked worker", () => {
  let emulator;
  let worker;
  let config;
  let lease;
  let hostDir;
  const base = { driverKey: "kubernetes", companyId: "company-1", environmentId: "env-1" };
  const invocation = (id) => ({ id, scope: { companyId: "company-1" } });

  beforeAll(async () => {
    emulator = await startEmulator("kubernetes-emulator", [
      "--fast",
      "--command-override",
      `/bin/sh=${JSON.stringify(["/bin/sh", "-c", HOSTILE_SH, "sh"])}`,
    ]);
    config = { kubeconfig: await readFile(emulator.kubeconfig, "utf8"), companySlug: "acme", backend: "sandbox-cr", egressMode: "cilium" };
    worker = await ForkedWorker.start("kubernetes");
    lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-hostile" }, { invocation: invocation("inv-acquire") });
    hostDir = await mkdtemp(path.join(tmpdir(), "k8s-hostile-"));
    await mkdir(path.join(hostDir, "victim"));
    await writeFile(path.join(hostDir, "victim/keep"), "host data\n");
  }, 60_000);

  afterAll(async () => {
    if (lease) {
      await worker
        ?.request("environmentDestroyLease", { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, { invocation: invocation("inv-destroy") })
        .catch(() => {});
    }
    worker?.kill();
    await emulator?.stop();
    if (hostDir) await rm(hostDir, { recursive: true, force: true });
  });

  async function inPod(script, { stdin, id }) {
    const result = await worker.call(
      "environmentExecute",
      { ...base, config, lease, command: "sh", args: ["-c", script], ...(stdin === undefined ? {} : { stdin }), timeoutMs: 30_000 },
      { invocation: invocation(id) },
    );
    expect(result, JSON.stringify(result)).toMatchObject({ exitCode: 0, timedOut: false });
    return result;
  }

  /** A directory sync-out of `source` into `<hostDir>/out`, refused; nothing outside `out` changed. */
  async function refusedSyncOut(source, id) {
    const destination = path.join(hostDir, "out");
    const before = await snapshot(hostDir, destination);
    const reply = await worker.request(
      "environmentSyncOut",
      { ...base, config, lease, operations: [{ operationId: id, files: [{ kind: "directory", sourcePath: source, targetPath: destination }] }] },
      { invocation: invocation(id) },
    );
    expect(reply.result, JSON.stringify(reply)).toBeUndefined();
    expect(await snapshot(hostDir, destination)).toEqual(before);
    expect(await isEmptyOrAbsent(destination)).toBe(true);
    expect(await readFile(path.join(hostDir, "victim/keep"), "utf8")).toBe("host data\n");
    return reply.error.message;
  }

  it("refuses a link named `x -> y` to a host path", async () => {
    await inPod("mkdir -p /workspace/named && ln -s /etc/passwd '/workspace/named/x -> y'", { id: "inv-named" });
    expect(await refusedSyncOut("/workspace/named", "out-named")).toBe(`${ESCAPING_LINK}x -> y -> /etc/passwd`);
  }, 60_000);

  it("refuses a chain of links that is confined only as text", async () => {
    const victim = path.join(hostDir, "victim");
    await inPod(`mkdir -p /workspace/chain && ln -s . /workspace/chain/d && ln -s d/.. /workspace/chain/up && ln -s up/victim /workspace/chain/v && ln -s '${victim}' /workspace/chain/w`, {
      id: "inv-chain",
    });
    const message = await refusedSyncOut("/workspace/chain", "out-chain");
    expect(message.startsWith(ESCAPING_LINK), message).toBe(true);
    expect(["up -> d/..", "v -> up/victim", `w -> ${victim}`]).toContain(message.slice(ESCAPING_LINK.length));
  }, 60_000);

  it("refuses a forged hard link to a host file", async () => {
    const victimFile = path.join(hostDir, "victim/keep");
    await inPod(`base64 -d > ${FORGED}`, { stdin: forgedArchive(victimFile).toString("base64"), id: "inv-forge" });
    try {
      const message = await refusedSyncOut("/workspace", "out-forged");
      // GNU tar drops a hard link target's leading `/`; the target is no member of the archive.
      expect(message).toBe(`${ESCAPING_LINK}h -> ${victimFile.replace(/^\/+/, "")}`);
      expect((await lstat(victimFile)).nlink).toBe(1);
    } finally {
      await inPod(`rm -f ${FORGED}`, { id: "inv-unforge" });
    }
    // With the agent's archive gone, an ordinary sync-out of the same lease goes through.
    await inPod("mkdir -p /workspace/fine && echo fine > /workspace/fine/f", { id: "inv-fine" });
    const fine = path.join(hostDir, "fine");
    const synced = await worker.call(
      "environmentSyncOut",
      { ...base, config, lease, operations: [{ operationId: "out-fine", files: [{ kind: "directory", sourcePath: "/workspace/fine", targetPath: fine }] }] },
      { invocation: invocation("out-fine") },
    );
    expect(synced.operations[0]).toMatchObject({ operationId: "out-fine", filesTransferred: 1 });
    expect(await readFile(path.join(fine, "f"), "utf8")).toBe("fine\n");
  }, 60_000);
});
