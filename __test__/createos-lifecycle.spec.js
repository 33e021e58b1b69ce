// One CreateOS lease lifecycle through a forked worker, as the host drives it, against the
// local CreateOS emulator (real HTTP, real commands in bubblewrap).

import { mkdtemp, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { ForkedWorker } from "../lib/forked-worker.js";

const CANARY_KEY = "canary-key-3f9d2b71-never-print-me";

describe("CreateOS lifecycle through a forked worker", () => {
  let emulator;
  let worker;
  let config;
  const base = { driverKey: "createos", companyId: "company-1", environmentId: "env-1" };
  const invocation = (id) => ({ id, scope: { companyId: "company-1" } });

  beforeAll(async () => {
    emulator = await startEmulator("createos-emulator", ["--api-key", CANARY_KEY, "--transition-ms", "20"]);
    config = { apiUrl: emulator.url, apiKey: CANARY_KEY, shape: "s-1vcpu-1gb" };
    worker = await ForkedWorker.start("createos");
  });

  afterAll(async () => {
    worker?.kill();
    await emulator?.stop();
  });

  async function counts() {
    return (await fetch(`${emulator.controlUrl}/counts`)).json();
  }

  it("acquires, realizes, syncs in, executes with streamed output, syncs out, and releases", async () => {
    const hostDir = await mkdtemp(path.join(tmpdir(), "createos-sync-"));
    await mkdir(path.join(hostDir, "project/src"), { recursive: true });
    await writeFile(path.join(hostDir, "project/src/main.sh"), 'echo "synced script ran"\n');
    await writeFile(path.join(hostDir, "project/README.md"), "# demo\n");
    const validated = await worker.call("environmentValidateConfig", { driverKey: "createos", config });
    expect(validated.ok).toBe(true);

    const lease = await worker.call(
      "environmentAcquireLease",
      { ...base, config, runId: "run-1" },
      { invocation: invocation("inv-acquire") },
    );
    expect(lease.providerLeaseId).toMatch(/\S/);
    expect(lease.metadata).toMatchObject({ provider: "createos", remoteCwd: "/paperclip-workspace", shellCommand: "bash" });
    expect(JSON.stringify(lease)).not.toContain(CANARY_KEY);
    expect((await counts()).sandboxes).toBe(1);

    const realized = await worker.call(
      "environmentRealizeWorkspace",
      { ...base, config, lease, workspace: { mode: "isolated" } },
      { invocation: invocation("inv-realize") },
    );
    expect(realized).toEqual({ cwd: "/paperclip-workspace", metadata: { provider: "createos", remoteCwd: "/paperclip-workspace" } });

    const syncedIn = await worker.call(
      "environmentSyncIn",
      {
        ...base,
        config,
        lease,
        operations: [
          {
            operationId: "op-in",
            files: [{ sourcePath: path.join(hostDir, "project"), targetPath: "/paperclip-workspace/project", kind: "directory" }],
            postUploadCommands: [{ command: "chmod +x src/main.sh", cwd: "/paperclip-workspace/project" }],
          },
        ],
      },
      { invocation: invocation("inv-sync-in") },
    );
    expect(syncedIn.operations).toHaveLength(1);
    expect(syncedIn.operations[0]).toMatchObject({ operationId: "op-in", filesTransferred: 2 });
    expect(syncedIn.operations[0].bytesTransferred).toBeGreaterThan(0);

    const ran = await worker.call(
      "environmentExecute",
      { ...base, config, lease, command: "bash", args: ["-c", "./project/src/main.sh > out.txt && cat out.txt"], cwd: "/paperclip-workspace" },
      { invocation: invocation("inv-run-synced") },
    );
    expect(ran).toMatchObject({ exitCode: 0, stdout: "synced script ran\n" });

    // A large result's output is set in its place by napi rather than parsed from the outcome's
    // text (src/bridge/outcome.rs): the same result, every character intact.
    const large = await worker.call(
      "environmentExecute",
      { ...base, config, lease, command: "bash", args: ["-c", "head -c 307200 /dev/zero | tr '\\0' x; printf 'é\"end'"], cwd: "/paperclip-workspace" },
      { invocation: invocation("inv-large") },
    );
    expect(large).toMatchObject({ exitCode: 0, signal: null, timedOut: false, stderr: "" });
    expect(large.stdout).toBe(`${"x".repeat(307200)}é"end`);
    const largeLogs = worker.rpc.notifications.filter((n) => n.paperclipInvocationId === "inv-large");
    expect(largeLogs.map((n) => n.params.chunk).join("")).toBe(large.stdout);

    // All-ASCII: the large string is handed to V8 as an external string instead of copied,
    // and must read back the same, after a GC may have run the finalizer of an earlier one.
    for (const id of ["inv-large-ascii-1", "inv-large-ascii-2"]) {
      const ascii = await worker.call(
        "environmentExecute",
        { ...base, config, lease, command: "bash", args: ["-c", "head -c 307200 /dev/zero | tr '\\0' y; printf '\"end'"], cwd: "/paperclip-workspace" },
        { invocation: invocation(id) },
      );
      expect(ascii).toMatchObject({ exitCode: 0, signal: null, timedOut: false, stderr: "" });
      expect(ascii.stdout).toBe(`${"y".repeat(307200)}"end`);
    }

    const syncedOut = await worker.call(
      "environmentSyncOut",
      {
        ...base,
        config,
        lease,
        operations: [
          {
            operationId: "op-out",
            files: [
              { sourcePath: "/paperclip-workspace/out.txt", targetPath: path.join(hostDir, "back/out.txt"), kind: "file" },
              { sourcePath: "/paperclip-workspace/project", targetPath: path.join(hostDir, "project-copy"), kind: "directory" },
            ],
          },
        ],
      },
      { invocation: invocation("inv-sync-out") },
    );
    expect(syncedOut.operations[0]).toMatchObject({ operationId: "op-out", filesTransferred: 3 });
    expect(await readFile(path.join(hostDir, "back/out.txt"), "utf8")).toBe("synced script ran\n");
    expect(await readFile(path.join(hostDir, "project-copy/src/main.sh"), "utf8")).toBe('echo "synced script ran"\n');
    // A synced-out target directory is created private to the host user, as the original does.
    expect((await stat(path.join(hostDir, "project-copy"))).mode & 0o777).toBe(0o700);
    await rm(hostDir, { recursive: true, force: true });

    const result = await worker.call(
      "environmentExecute",
      {
        ...base,
        config,
        lease,
        command: "bash",
        args: ["-c", 'for i in 1 2 3; do echo "line $i"; done; echo oops >&2; printf "%s" "$GREETING"; exit 3'],
        cwd: "/paperclip-workspace",
        env: { GREETING: "hello" },
      },
      { invocation: invocation("inv-execute") },
    );
    expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, stdout: "line 1\nline 2\nline 3\nhello", stderr: "oops\n" });

    const allLogs = worker.rpc.notifications.filter((n) => n.method === "execute.log");
    expect(allLogs.filter((n) => !n.paperclipInvocationId)).toEqual([]);
    const logs = allLogs.filter((n) => n.paperclipInvocationId === "inv-execute");
    expect(logs.length).toBeGreaterThan(0);
    const streamed = (stream) => logs.filter((l) => l.params.stream === stream).map((l) => l.params.chunk).join("");
    expect(streamed("stdout")).toBe(result.stdout);
    expect(streamed("stderr")).toBe(result.stderr);

    const released = await worker.request(
      "environmentReleaseLease",
      { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata },
      { invocation: invocation("inv-release") },
    );
    expect(released.error).toBeUndefined();
    expect(await counts()).toMatchObject({ sandboxes: 0, liveProcesses: 0 });
  });

  it("rejects with the catalogued message, not a provider body", async () => {
    const response = await worker.request(
      "environmentRealizeWorkspace",
      { ...base, config, lease: { providerLeaseId: null }, workspace: {} },
      { invocation: invocation("inv-bad-realize") },
    );
    expect(response.error).toMatchObject({ code: -32002, message: "CreateOS workspace requires a lease from this environment." });
  });

  it("never shows the API key and exits cleanly", async () => {
    const { exit } = await worker.shutdown();
    expect(exit).toEqual({ code: 0, signal: null });
    // validate echoes the config it normalised (apiKey included), as the original does; nothing
    // else the worker says may carry the key.
    const otherLines = worker.rpc.lines.filter((line) => !JSON.parse(line).result?.normalizedConfig);
    expect(otherLines.length).toBeGreaterThan(5);
    expect(otherLines.join("\n")).not.toContain(CANARY_KEY);
    expect(worker.stderr).not.toContain(CANARY_KEY);
    const logs = worker.rpc.notifications.filter((n) => n.method === "log");
    expect(logs.map((n) => n.params.message)).toContain("CreateOS sandbox provider ready");
  });
});
