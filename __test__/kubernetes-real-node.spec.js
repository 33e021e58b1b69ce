// A Kubernetes lease lifecycle through a forked worker, as the host drives it, against the real
// single-node cluster of scripts/real-cluster/node.sh (containerd, runc, kubelet, scheduler, the
// real control plane and the kubernetes-sigs/agent-sandbox controller): probe, acquire
// (sandbox-cr), execute with stdin and streamed output, release, destroy, and nothing of the
// lease left in the cluster (listed with kubectl).
//
// The node needs root and the Debian packages node.sh names; where it cannot start this test
// fails with node.sh's reason (it never skips). Missing binaries or images are built first
// (node.sh `up` runs scripts/real-cluster/build.sh, cached outside the repository). One node at a
// time on a host: `up` waits for another to stop (at most 15 min, its own bound).

import { spawn, execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { ForkedWorker } from "../lib/forked-worker.js";
import { repoRoot } from "./support/paths.js";
import { pollUntil } from "./support/poll.js";

const run = promisify(execFile);
const NODE_SH = path.join(repoRoot, "scripts/real-cluster/node.sh");
const KUBECTL = path.join(homedir(), ".cache/paperclip-sandbox/kube-v1.37.2/bin/kubectl");
// A lock wait (15 min) and a cold build (about 12 min) at worst; seconds when all is cached.
const NODE_START_MS = 40 * 60_000;
const NODE_STOP_MS = 3 * 60_000;

/** Starts `node.sh up` and resolves with its JSON line; fails with its stderr if it exits. */
async function startNode() {
  const check = spawn("bash", [NODE_SH, "check"], { stdio: ["ignore", "ignore", "pipe"] });
  let checkErr = "";
  check.stderr.setEncoding("utf8").on("data", (c) => (checkErr += c));
  const checked = await pollUntil(() => check.exitCode, (code) => code !== null, { withinMs: 60_000, everyMs: 50 });
  if (checked !== 0) {
    throw new Error(`the real node cannot run here, so this test cannot run (it never skips): ${checkErr.trim()}`);
  }
  // No PAPERCLIP_NODE_NO_BUILD: what is missing is built first.
  const env = { ...process.env };
  delete env.PAPERCLIP_NODE_NO_BUILD;
  const child = spawn("bash", [NODE_SH, "up"], { stdio: ["pipe", "pipe", "pipe"], env });
  const node = { child, stdout: "", stderr: "" };
  child.stdout.setEncoding("utf8").on("data", (c) => (node.stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c) => {
    node.stderr += c;
    process.stderr.write(c); // build progress and node.sh's own lines
  });
  await pollUntil(
    () => ({ line: node.stdout.includes("\n"), exited: child.exitCode !== null || child.signalCode !== null }),
    ({ line, exited }) => line || exited,
    { withinMs: NODE_START_MS, everyMs: 100 },
  );
  if (!node.stdout.includes("\n")) {
    const how = child.exitCode !== null || child.signalCode !== null ? `exited (${child.exitCode ?? child.signalCode})` : "did not answer in time";
    throw new Error(`the real node did not start: node.sh ${how}: ${node.stderr.trim()}`);
  }
  node.ready = JSON.parse(node.stdout.slice(0, node.stdout.indexOf("\n")));
  return node;
}

/** Closes node.sh's stdin and waits (bounded) for it to stop the node and restore the host. */
async function stopNode(node) {
  node.child.stdin.end();
  const exit = await pollUntil(
    () => node.child.exitCode ?? node.child.signalCode,
    (code) => code !== null,
    { withinMs: NODE_STOP_MS, everyMs: 100 },
  );
  if (exit === null) {
    node.child.kill("SIGTERM");
    throw new Error(`node.sh did not stop within ${NODE_STOP_MS} ms of its stdin closing: ${node.stderr.slice(-2000)}`);
  }
  return exit;
}

describe("Kubernetes lifecycle through a forked worker on the real node", () => {
  let node;
  let worker;
  let kubeconfigPath;
  let config;
  const companySlug = `real-node-js-${Date.now().toString(36)}`;
  const base = { driverKey: "kubernetes", companyId: "company-real-node", environmentId: "env-real" };
  const invocation = (id) => ({ id, scope: { companyId: "company-real-node" } });

  beforeAll(async () => {
    node = await startNode();
    kubeconfigPath = node.ready.kubeconfig;
    // As crates/kubernetes/tests/real_cluster/node.rs's `provider_config`: the kubeconfig inline,
    // the company slug, the backend, and the node's agent image through the default adapter's
    // registry entry (`runtimeImage`; its tag is not floating, so nothing is pulled).
    config = {
      kubeconfig: await readFile(kubeconfigPath, "utf8"),
      companySlug,
      backend: "sandbox-cr",
      adapters: [{ adapterType: "claude_local", runtimeImage: node.ready.images.agent }],
    };
    worker = await ForkedWorker.start("kubernetes");
  }, NODE_START_MS + 60_000);

  afterAll(async () => {
    worker?.kill();
    if (node) expect(await stopNode(node)).toBe(0);
  }, NODE_STOP_MS + 10_000);

  /** The lease's objects left in its namespace, listed with kubectl: any Sandbox, Job or pod,
   * and Secrets or NetworkPolicies named after the lease. */
  async function leftovers(namespace, leaseName) {
    const { stdout } = await run(
      KUBECTL,
      ["--kubeconfig", kubeconfigPath, "-n", namespace, "get", "sandboxes.agents.x-k8s.io,jobs,pods,secrets,networkpolicies", "-o", "json"],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    return JSON.parse(stdout)
      .items.filter((item) => ["Sandbox", "Job", "Pod"].includes(item.kind) || item.metadata.name.startsWith(leaseName))
      .map((item) => `${item.kind}/${item.metadata.name}`);
  }

  it(
    "probes, acquires a sandbox-cr lease, executes with stdin and streamed output, releases and destroys it, nothing left",
    async () => {
      const probe = await worker.call("environmentProbe", { ...base, config }, { invocation: invocation("inv-probe") });
      expect(probe).toMatchObject({ ok: true, summary: `Kubernetes cluster reachable. Tenant namespace: paperclip-${companySlug}.` });

      const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-real-js" }, { invocation: invocation("inv-acquire") });
      expect(lease.providerLeaseId).toMatch(/^pc-/);
      // The real controller serves agents.x-k8s.io/v1beta1 only: discovery picks it.
      expect(lease.metadata).toMatchObject({
        backend: "sandbox-cr",
        namespace: `paperclip-${companySlug}`,
        remoteCwd: "/workspace",
        sandboxApiVersion: "v1beta1",
      });
      const { namespace } = lease.metadata;

      const result = await worker.call(
        "environmentExecute",
        {
          ...base,
          config,
          lease,
          command: "sh",
          args: ["-c", "cat; echo out; echo err >&2; exit 3"],
          stdin: "from stdin\n",
          timeoutMs: 120_000,
        },
        { invocation: invocation("inv-execute") },
      );
      expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, stdout: "from stdin\nout\n", stderr: "err\n" });
      // The chunks reached the host as ctx.execution.log notifications of this invocation.
      const logs = worker.rpc.notifications.filter((n) => n.method === "execute.log" && n.paperclipInvocationId === "inv-execute");
      expect(logs.filter((l) => l.params.stream === "stdout").map((l) => l.params.chunk).join("")).toBe(result.stdout);
      expect(logs.filter((l) => l.params.stream === "stderr").map((l) => l.params.chunk).join("")).toBe(result.stderr);
      expect(worker.rpc.notifications.filter((n) => n.method === "execute.log" && !n.paperclipInvocationId)).toEqual([]);

      const leaseParams = { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata };
      const released = await worker.request("environmentReleaseLease", leaseParams, { invocation: invocation("inv-release") });
      expect(released.error).toBeUndefined();
      const destroyed = await worker.request("environmentDestroyLease", leaseParams, { invocation: invocation("inv-destroy") });
      expect(destroyed.error).toBeUndefined();

      // Deletion cascades in the background (the controller, then the kubelet): wait, bounded.
      const left = await pollUntil(
        () => leftovers(namespace, lease.providerLeaseId),
        (names) => names.length === 0,
        { withinMs: 120_000, everyMs: 500 },
      );
      expect(left).toEqual([]);

      const { exit } = await worker.shutdown();
      expect(exit).toEqual({ code: 0, signal: null });
    },
    10 * 60_000,
  );
});
