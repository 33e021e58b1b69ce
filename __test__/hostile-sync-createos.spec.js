// A hostile sandbox against the host, through the real forked CreateOS worker and the CreateOS
// emulator: content a root agent can make in its sandbox (link chains that normalise inside as
// text, an archive forged by a replaced `tar` with a hard link through one of its own links, a
// 10 GB sparse file) is synced out, and each attempt is refused with its message while nothing
// outside the destination changes.

import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { ForkedWorker } from "../lib/forked-worker.js";
import { snapshot, ustarHeader } from "./support/hostile-tree.js";

const CANARY_KEY = "canary-key-7c1e5a90-never-print-me";
const ARCHIVE_UNSAFE = "CreateOS archive contains unsafe entries or exceeds the extraction limit.";
const fileTooLarge = (source) =>
  `CreateOS sync-out file ${source} is larger than the 8 GiB limit; nothing was written to the target.`;

describe("a hostile CreateOS sandbox through a forked worker", () => {
  let emulator;
  let worker;
  let config;
  let lease;
  let host;
  const base = { driverKey: "createos", companyId: "company-1", environmentId: "env-1" };
  const invocation = (id) => ({ id, scope: { companyId: "company-1" } });

  async function sh(script, stdin) {
    const ran = await worker.call(
      "environmentExecute",
      { ...base, config, lease, command: "bash", args: ["-c", script], cwd: "/paperclip-workspace", ...(stdin ? { stdin } : {}) },
      { invocation: invocation(`sh-${Math.random()}`) },
    );
    expect(ran.exitCode, `${script}: ${ran.stderr}`).toBe(0);
  }

  /** Sync-out refused with `message`, and the host directory unchanged. */
  async function refused(files, message) {
    const before = await snapshot(host);
    const error = await worker
      .call("environmentSyncOut", { ...base, config, lease, operations: [{ operationId: "op", files }] }, { invocation: invocation("out") })
      .then(
        () => null,
        (e) => e,
      );
    expect(error?.message).toBe(message);
    expect(JSON.stringify(error)).not.toContain(CANARY_KEY);
    expect(await snapshot(host)).toEqual(before);
  }

  beforeAll(async () => {
    emulator = await startEmulator("createos-emulator", ["--api-key", CANARY_KEY, "--transition-ms", "20"]);
    config = { apiUrl: emulator.url, apiKey: CANARY_KEY, shape: "s-1vcpu-1gb" };
    worker = await ForkedWorker.start("createos");
    lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "hostile" }, { invocation: invocation("acquire") });
    host = await mkdtemp(path.join(tmpdir(), "createos-hostile-"));
    await mkdir(path.join(host, "victim"));
    await writeFile(path.join(host, "victim/keep"), "host secret\n");
  });

  afterAll(async () => {
    worker?.kill();
    await emulator?.stop();
    if (host) await rm(host, { recursive: true, force: true });
  });

  it("refuses link chains that normalise inside only as text", async () => {
    await sh(
      "mkdir -p chain && cd chain && ln -s . d && ln -s d/.. e && ln -s e/e/e/e/etc/passwd p && ln -s e/e/e/e r",
    );
    await refused(
      [{ kind: "directory", sourcePath: "/paperclip-workspace/chain", targetPath: path.join(host, "chain-out") }],
      ARCHIVE_UNSAFE,
    );
  });

  it("refuses a forged hard link through one of the archive's own links", async () => {
    // `d -> .`, then `h` hard-linked to `d/../victim/keep`: extracted as the original did, a
    // hard link to a host file beside the destination.
    const forged = Buffer.concat([
      ustarHeader({ name: "./", type: "5" }),
      ustarHeader({ name: "./d", type: "2", link: "." }),
      ustarHeader({ name: "./h", type: "1", link: "d/../victim/keep" }),
      Buffer.alloc(1024),
    ]);
    // A root agent's own `tar`, first on the login shell's PATH: it writes the forged archive
    // wherever `-cf` says.
    const fakeTar =
      '#!/bin/bash\nwhile [ $# -gt 0 ]; do if [ "$1" = -cf ]; then exec cp /root/forged.tar "$2"; fi; shift; done\nexit 2\n';
    const fakeTarBase64 = Buffer.from(fakeTar).toString("base64");
    await sh(
      `mkdir -p /root/bin forged && echo ${fakeTarBase64} | base64 -d > /root/bin/tar && chmod 755 /root/bin/tar ` +
        `&& echo 'export PATH=/root/bin:$PATH' > /root/.bash_profile && base64 -d > /root/forged.tar`,
      forged.toString("base64"),
    );
    try {
      await refused(
        [{ kind: "directory", sourcePath: "/paperclip-workspace/forged", targetPath: path.join(host, "forged-out") }],
        ARCHIVE_UNSAFE,
      );
    } finally {
      await sh("rm -f /root/.bash_profile /root/bin/tar");
    }
    expect(await readFile(path.join(host, "victim/keep"), "utf8")).toBe("host secret\n");
  });

  it(
    "refuses a 10 GB sparse file instead of writing it to the host",
    async () => {
      await sh("truncate -s 10GB sparse && printf end >> sparse");
      await writeFile(path.join(host, "target"), "before\n");
      await refused(
        [{ kind: "file", sourcePath: "/paperclip-workspace/sparse", targetPath: path.join(host, "target") }],
        fileTooLarge("/paperclip-workspace/sparse"),
      );
      expect(await readFile(path.join(host, "target"), "utf8")).toBe("before\n");
    },
    // 8 GiB stream through the emulator before the cut, under the config's default 300 s.
    320_000,
  );

  it("leaves nothing in the emulator once the lease is destroyed", async () => {
    const destroyed = await worker.request(
      "environmentDestroyLease",
      { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata },
      { invocation: invocation("destroy") },
    );
    expect(destroyed.error).toBeUndefined();
    expect(await (await fetch(`${emulator.controlUrl}/counts`)).json()).toMatchObject({ sandboxes: 0, liveProcesses: 0 });
  });
});
