// One CreateOS lease lifecycle through a forked worker, as the host drives it, against the
// local CreateOS emulator (real HTTP, real commands in bubblewrap).

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../scripts/lib/emulators.js";
import { ForkedWorker } from "../scripts/lib/forked-worker.js";

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

  it("acquires, realizes, executes with streamed output, and releases", async () => {
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

    const logs = worker.rpc.notifications.filter((n) => n.method === "execute.log");
    expect(logs.length).toBeGreaterThan(0);
    for (const log of logs) expect(log.paperclipInvocationId).toBe("inv-execute");
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
