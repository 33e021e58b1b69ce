// Login terminals and duplex channels through a forked worker against the CreateOS emulator:
// the host sees `loginPty.*` and `duplexChannel.*` notifications routed by exact ids.

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { ForkedWorker } from "../lib/forked-worker.js";

const CANARY_KEY = "canary-key-5a7c-sessions-never-print-me";
// A stand-in login CLI: greets, echoes one line of input, exits 5.
const FAKE_CLAUDE = '#!/bin/bash\necho "login for $1"\nread -r line\necho "got:$line"\nexit 5\n';

describe("CreateOS sessions through a forked worker", () => {
  let emulator;
  let worker;
  let config;
  let lease;
  const base = { driverKey: "createos", companyId: "company-1", environmentId: "env-1" };
  const invocation = (id) => ({ invocation: { id, scope: { companyId: "company-1" } } });

  beforeAll(async () => {
    emulator = await startEmulator("createos-emulator", ["--api-key", CANARY_KEY, "--transition-ms", "20"]);
    config = { apiUrl: emulator.url, apiKey: CANARY_KEY, shape: "s-1vcpu-1gb" };
    worker = await ForkedWorker.start("createos");
    lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-s" }, invocation("inv-acquire"));
    const installed = await worker.call(
      "environmentExecute",
      {
        ...base,
        config,
        lease,
        command: "bash",
        args: ["-c", `mkdir -p /root/bin && printf '%s' '${FAKE_CLAUDE}' > /root/bin/claude && chmod +x /root/bin/claude && echo 'PATH=/root/bin:$PATH' > /root/.bash_profile`],
      },
      invocation("inv-install"),
    );
    expect(installed.exitCode).toBe(0);
  });

  afterAll(async () => {
    worker?.kill();
    await emulator?.stop();
  });

  it("runs a login terminal: output, input, exit, all routed by id", async () => {
    const opened = await worker.call("loginPtyOpen", {
      ...base,
      hostRouteId: "route-login-1",
      providerLeaseId: lease.providerLeaseId,
      loginCommandKey: "claude",
      sessionHome: "/tmp/paperclip-adapter-login/7d0f2a56-3f5e-4a4e-9a53-0d7f4f1e2b11",
    });
    expect(opened.workerSessionId).toMatch(/\S/);
    const ids = { hostRouteId: "route-login-1", workerSessionId: opened.workerSessionId };
    const outputOf = () =>
      worker.rpc.notifications
        .filter((n) => n.method === "loginPty.output" && n.params.hostRouteId === ids.hostRouteId)
        .map((n) => n.params.chunk)
        .join("");

    await worker.rpc.waitForNotification((n) => n.method === "loginPty.output" && outputOf().includes("login for setup-token"));
    await worker.call("loginPtyInput", { workerSessionId: ids.workerSessionId, data: "hello pty\r" });
    const exit = await worker.rpc.waitForNotification((n) => n.method === "loginPty.exit" && n.params.hostRouteId === ids.hostRouteId);
    expect(exit.params).toEqual({ ...ids, exitCode: 5 });
    expect(outputOf()).toContain("got:hello pty");
    for (const n of worker.rpc.notifications.filter((m) => m.method.startsWith("loginPty."))) {
      expect(n.params.workerSessionId).toBe(ids.workerSessionId);
    }

    const closed = await worker.call("loginPtyClose", { hostRouteId: ids.hostRouteId, workerSessionId: ids.workerSessionId });
    expect(closed).toEqual({ hostRouteId: ids.hostRouteId });
  });

  it("runs a duplex channel: bytes both ways as canonical base64, exact-pair close", async () => {
    const opened = await worker.call("duplexChannelOpen", {
      ...base,
      hostRouteId: "route-duplex-1",
      providerLeaseId: lease.providerLeaseId,
      command: ["cat"],
    });
    expect(opened).toEqual({ hostRouteId: "route-duplex-1", workerSessionId: expect.any(String) });
    const ids = { hostRouteId: "route-duplex-1", workerSessionId: opened.workerSessionId };

    const payload = Buffer.from("ping \u00ff\u0000 pong");
    await worker.call("duplexChannelWrite", { ...ids, data: payload.toString("base64") });
    const received = () =>
      Buffer.concat(
        worker.rpc.notifications
          .filter((n) => n.method === "duplexChannel.data" && n.params.workerSessionId === ids.workerSessionId)
          .map((n) => Buffer.from(n.params.chunk, "base64")),
      );
    await worker.rpc.waitForNotification((n) => n.method === "duplexChannel.data" && received().length >= payload.length);
    expect(received().equals(payload)).toBe(true);

    const bad = await worker.request("duplexChannelWrite", { ...ids, data: "aGk" });
    expect(bad.error?.code).toBe(-32002);

    const closed = await worker.call("duplexChannelClose", ids);
    expect(closed).toEqual(ids);
    const exit = await worker.rpc.waitForNotification((n) => n.method === "duplexChannel.exit" && n.params.workerSessionId === ids.workerSessionId);
    expect(exit.params.hostRouteId).toBe(ids.hostRouteId);
  });

  it("shuts down with sessions still open: exits 0 and stops their processes", async () => {
    await worker.call("duplexChannelOpen", { ...base, hostRouteId: "route-open-at-shutdown", providerLeaseId: lease.providerLeaseId, command: ["cat"] });
    expect((await (await fetch(`${emulator.controlUrl}/counts`)).json()).liveProcesses).toBeGreaterThan(0);

    const { exit } = await worker.shutdown();
    expect(exit).toEqual({ code: 0, signal: null });
    // The lease itself stays for the host to release or destroy later; its sessions do not.
    expect(await (await fetch(`${emulator.controlUrl}/counts`)).json()).toMatchObject({ sandboxes: 1, liveProcesses: 0 });
    expect(worker.rpc.lines.join("\n")).not.toContain(CANARY_KEY);
    expect(worker.stderr).not.toContain(CANARY_KEY);
  });
});
