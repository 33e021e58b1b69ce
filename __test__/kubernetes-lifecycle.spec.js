// A Kubernetes lease lifecycle on each backend through a forked worker, as the host drives it,
// against the local Kubernetes API emulator (real kube-rs over HTTPS, exec over websocket into
// bubblewrap-sandboxed pods).

import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { ForkedWorker } from "../lib/forked-worker.js";
import { pollUntil } from "./support/poll.js";

const CANARY_TOKEN = "canary-token-8c1e55d0-never-print-me";
const JOB_SHIM = "/usr/local/bin/paperclip-agent-shim";

describe("Kubernetes lifecycles through a forked worker", () => {
  let emulator;
  let worker;
  let kubeconfig;
  const base = { driverKey: "kubernetes", companyId: "company-1", environmentId: "env-1" };
  const invocation = (id) => ({ id, scope: { companyId: "company-1" } });
  const configFor = (backend) => ({ kubeconfig, companySlug: "acme", backend, egressMode: "cilium" });

  beforeAll(async () => {
    emulator = await startEmulator("kubernetes-emulator", [
      "--fast",
      "--token",
      CANARY_TOKEN,
      "--command-override",
      `${JOB_SHIM}=${JSON.stringify(["/bin/sh", "-c", "echo job-output"])}`,
    ]);
    kubeconfig = await readFile(emulator.kubeconfig, "utf8");
    worker = await ForkedWorker.start("kubernetes");
  });

  afterAll(async () => {
    worker?.kill();
    await emulator?.stop();
  });

  /** Lease-scoped objects left in the tenant namespace, and live processes. */
  async function leftovers() {
    const counts = await (await fetch(`${emulator.controlUrl}/counts`)).json();
    const tenant = counts.namespaces["paperclip-acme"] ?? {};
    const scoped = ["pods", "sandboxes", "jobs", "secrets"].filter((plural) => (tenant[plural] ?? 0) > 0);
    return { scoped, liveProcesses: counts.liveProcesses };
  }

  /** Deletion cascades in the background, as in a cluster: wait (bounded) for it to settle. */
  async function settledLeftovers() {
    return pollUntil(leftovers, (last) => last.scoped.length === 0 && last.liveProcesses === 0);
  }

  it("probes the cluster", async () => {
    const probe = await worker.call("environmentProbe", { ...base, config: configFor("sandbox-cr") }, { invocation: invocation("inv-probe") });
    expect(probe.ok, probe.summary).toBe(true);
    // The original's line first, then one line per check (issue #37).
    const lines = probe.summary.split("\n");
    expect(lines[0]).toBe("Kubernetes cluster reachable. Tenant namespace: paperclip-acme.");
    expect(lines).toContain("Sandbox API agents.x-k8s.io: served in v1alpha1; leases use v1alpha1.");
    expect(lines.some((line) => /^Permissions: all \d+ the config needs are granted\.$/.test(line)), probe.summary).toBe(true);
    expect(probe.metadata).toMatchObject({ namespace: "paperclip-acme", provider: "kubernetes", adapter: { adapterType: "claude_local" } });
    expect(probe.metadata.checks.every((check) => check.ok)).toBe(true);
  });

  it("runs a sandbox-cr lease: acquire, realize, sync in, execute with streamed output, sync out, release", async () => {
    const config = configFor("sandbox-cr");
    const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-1" }, { invocation: invocation("inv-acquire") });
    expect(lease.providerLeaseId).toMatch(/^pc-/);
    // G-remoteCwd and G-apiversion: the workspace dir and the Sandbox API version are on the lease
    // from the start (the emulator serves v1alpha1 only).
    expect(lease.metadata).toMatchObject({ backend: "sandbox-cr", namespace: "paperclip-acme", remoteCwd: "/workspace", sandboxApiVersion: "v1alpha1" });

    const realized = await worker.call(
      "environmentRealizeWorkspace",
      { ...base, config, lease, workspace: { remotePath: "/workspace" } },
      { invocation: invocation("inv-realize") },
    );
    expect(realized.cwd).toBe("/workspace");

    // As the published host does: sync gets the acquired lease, with no realized remoteCwd merged in.
    const workspaceLease = lease;
    const hostDir = await mkdtemp(path.join(tmpdir(), "k8s-sync-"));
    await mkdir(path.join(hostDir, "app"), { recursive: true });
    await writeFile(path.join(hostDir, "app/run.sh"), "echo synced into the pod\n");
    const syncedIn = await worker.call(
      "environmentSyncIn",
      {
        ...base,
        config,
        lease: workspaceLease,
        operations: [{ operationId: "in-1", files: [{ sourcePath: path.join(hostDir, "app"), targetPath: "/workspace/app", kind: "directory" }] }],
      },
      { invocation: invocation("inv-sync-in") },
    );
    expect(syncedIn.operations[0]).toMatchObject({ operationId: "in-1", filesTransferred: 1 });
    const ran = await worker.call(
      "environmentExecute",
      { ...base, config, lease, command: "sh", args: ["-c", "sh /workspace/app/run.sh | tee /workspace/result.txt"], timeoutMs: 30_000 },
      { invocation: invocation("inv-run-synced") },
    );
    expect(ran).toMatchObject({ exitCode: 0, signal: null, stdout: "synced into the pod\n" });
    // G-exec2: the host's cwd is honoured.
    const inApp = await worker.call(
      "environmentExecute",
      { ...base, config, lease, command: "pwd", args: [], cwd: "/workspace/app", timeoutMs: 30_000 },
      { invocation: invocation("inv-cwd") },
    );
    expect(inApp).toMatchObject({ exitCode: 0, signal: null, stdout: "/workspace/app\n" });
    const syncedOut = await worker.call(
      "environmentSyncOut",
      {
        ...base,
        config,
        lease: workspaceLease,
        operations: [{ operationId: "out-1", files: [{ sourcePath: "/workspace/result.txt", targetPath: path.join(hostDir, "back/result.txt"), kind: "file" }] }],
      },
      { invocation: invocation("inv-sync-out") },
    );
    expect(syncedOut.operations[0]).toMatchObject({ operationId: "out-1", filesTransferred: 1, bytesTransferred: 20 });
    expect(await readFile(path.join(hostDir, "back/result.txt"), "utf8")).toBe("synced into the pod\n");
    await rm(hostDir, { recursive: true, force: true });

    const result = await worker.call(
      "environmentExecute",
      {
        ...base,
        config,
        lease,
        command: "sh",
        args: ["-c", 'echo "hello $WHO"; echo warn >&2; exit 4'],
        env: { WHO: "cluster" },
        timeoutMs: 30_000,
      },
      { invocation: invocation("inv-execute") },
    );
    expect(result).toMatchObject({ exitCode: 4, timedOut: false, stdout: "hello cluster\n", stderr: "warn\n" });
    const logs = worker.rpc.notifications.filter((n) => n.method === "execute.log" && n.paperclipInvocationId === "inv-execute");
    expect(logs.filter((l) => l.params.stream === "stdout").map((l) => l.params.chunk).join("")).toBe(result.stdout);
    expect(logs.filter((l) => l.params.stream === "stderr").map((l) => l.params.chunk).join("")).toBe(result.stderr);
    expect(worker.rpc.notifications.filter((n) => n.method === "execute.log" && !n.paperclipInvocationId)).toEqual([]);

    const released = await worker.request(
      "environmentReleaseLease",
      { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata },
      { invocation: invocation("inv-release") },
    );
    expect(released.error).toBeUndefined();
  });

  it("runs a job lease: acquire, execute returns the job's output, destroy", async () => {
    const config = configFor("job");
    const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-2" }, { invocation: invocation("inv-acquire-job") });
    expect(lease.metadata).toMatchObject({ backend: "job" });
    const result = await worker.call(
      "environmentExecute",
      { ...base, config, lease, command: "ignored-by-the-job-backend", timeoutMs: 30_000 },
      { invocation: invocation("inv-execute-job") },
    );
    expect(result).toMatchObject({ exitCode: 0, stdout: "job-output\n" });
    const destroyed = await worker.request(
      "environmentDestroyLease",
      { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata },
      { invocation: invocation("inv-destroy-job") },
    );
    expect(destroyed.error).toBeUndefined();
  });

  it("never shows the token, and exits cleanly", async () => {
    const { exit } = await worker.shutdown();
    expect(exit).toEqual({ code: 0, signal: null });
    const otherLines = worker.rpc.lines.filter((line) => !JSON.parse(line).result?.normalizedConfig);
    expect(otherLines.join("\n")).not.toContain(CANARY_TOKEN);
    expect(worker.stderr).not.toContain(CANARY_TOKEN);
    expect(worker.rpc.notifications.filter((n) => n.method === "log").map((n) => n.params.message)).toContain(
      "Kubernetes sandbox provider plugin ready",
    );
    expect(await settledLeftovers()).toEqual({ scoped: [], liveProcesses: 0 });
  });
});

// The pods have no `claude`: this emulator's `/bin/sh` first installs a stand-in on PATH.
const FAKE_CLAUDE_SHELL =
  'if [ ! -x /tmp/fakebin/claude ]; then mkdir -p /tmp/fakebin && printf "%s\\n" "#!/bin/sh" "printf \\"ready\\\\n\\"" "read -r line; printf \\"got:%s\\\\n\\" \\"\\$line\\"; exit 7" > /tmp/fakebin/claude && chmod +x /tmp/fakebin/claude; fi; PATH=/tmp/fakebin:$PATH; eval "$2"';

describe("Kubernetes login terminal through a forked worker", () => {
  let emulator;
  let worker;

  beforeAll(async () => {
    emulator = await startEmulator("kubernetes-emulator", [
      "--fast",
      "--token",
      CANARY_TOKEN,
      "--command-override",
      `/bin/sh=${JSON.stringify(["/bin/bash", "-c", FAKE_CLAUDE_SHELL, "sh"])}`,
    ]);
    worker = await ForkedWorker.start("kubernetes");
  });

  afterAll(async () => {
    worker?.kill();
    await emulator?.stop();
  });

  it("opens a login PTY on a sandbox-cr lease: output, input, exit, routed by id", async () => {
    const kubeconfig = await readFile(emulator.kubeconfig, "utf8");
    const config = { kubeconfig, companySlug: "acme", egressMode: "cilium" };
    const base = { driverKey: "kubernetes", companyId: "company-1", environmentId: "env-1" };
    const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-login" }, {
      invocation: { id: "inv-acquire", scope: { companyId: "company-1" } },
    });

    const opened = await worker.call("loginPtyOpen", {
      ...base,
      hostRouteId: "route-k8s-login",
      providerLeaseId: lease.providerLeaseId,
      loginCommandKey: "claude",
      sessionHome: "/tmp/paperclip-adapter-login/0b9a3f1e-6c2d-4f7a-8e1b-2d3c4b5a6978",
    });
    const ids = { hostRouteId: "route-k8s-login", workerSessionId: opened.workerSessionId };
    const output = () =>
      worker.rpc.notifications
        .filter((n) => n.method === "loginPty.output" && n.params.workerSessionId === ids.workerSessionId)
        .map((n) => n.params.chunk)
        .join("");
    await worker.rpc.waitForNotification((n) => n.method === "loginPty.output" && output().includes("ready"));
    await worker.call("loginPtyInput", { workerSessionId: ids.workerSessionId, data: "hello k8s\r" });
    const exit = await worker.rpc.waitForNotification((n) => n.method === "loginPty.exit" && n.params.workerSessionId === ids.workerSessionId);
    expect(exit.params).toEqual({ ...ids, exitCode: 7 });
    expect(output()).toContain("got:hello k8s");
    expect(await worker.call("loginPtyClose", ids)).toEqual({ hostRouteId: ids.hostRouteId });

    await worker.call(
      "environmentReleaseLease",
      { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata },
      { invocation: { id: "inv-release", scope: { companyId: "company-1" } } },
    );
    const { exit: workerExit } = await worker.shutdown();
    expect(workerExit).toEqual({ code: 0, signal: null });
    expect(worker.rpc.lines.filter((l) => !JSON.parse(l).result?.normalizedConfig).join("\n")).not.toContain(CANARY_TOKEN);
  });
});
