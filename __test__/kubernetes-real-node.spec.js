// The Kubernetes provider's lease lifecycles through forked workers, as the host drives them,
// against the real single-node cluster of scripts/real-cluster/node.sh (containerd, runc, kubelet,
// scheduler, the real control plane, the real job controller and the kubernetes-sigs/agent-sandbox
// controller), on both backends: sandbox-cr (probe, acquire, execute with stdin and streamed
// output, release, destroy), job (the Job run to completion by the real job controller, its log as
// the result), native sync in and out (a small tree both ways, byte for byte with modes), and the
// login PTY (input, output, exit code, stop and close ending the process in the pod). Each test
// checks that nothing of its lease is left in the cluster (listed with kubectl) and that its
// worker exits 0.
//
// The node needs root and the Debian packages node.sh names; where it cannot start these tests
// fail with node.sh's reason (they never skip). Missing binaries or images are built first
// (node.sh `up` runs scripts/real-cluster/build.sh, cached outside the repository). One node for
// the whole file, and one at a time on a host: `up` waits for another to stop (at most 15 min,
// its own bound).

import { spawn, execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
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
const TEST_MS = 10 * 60_000;
// How long a pod-side event (output of a tty exec, its exit) may take to reach the host on a
// loaded 2-core machine; a bound, not a delay.
const EVENT_MS = 60_000;

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

/** Every entry under `root` (relative path -> its kind, mode and, for a file, its bytes in hex),
 * for comparing two trees byte for byte with their modes. */
async function treeOf(root) {
  const out = {};
  async function walk(dir) {
    for (const name of await readdir(dir)) {
      const full = path.join(dir, name);
      const rel = path.relative(root, full);
      const stat = await lstat(full);
      const mode = (stat.mode & 0o7777).toString(8);
      if (stat.isDirectory()) {
        out[rel] = { dir: true, mode };
        await walk(full);
      } else {
        out[rel] = { mode, bytes: stat.isFile() ? (await readFile(full)).toString("hex") : `not a regular file: ${stat.mode}` };
      }
    }
  }
  await walk(root);
  return out;
}

/** Writes `body` at `file` with exactly `mode` (not masked by the umask). */
async function put(file, body, mode) {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, body);
  await chmod(file, mode);
}

describe("Kubernetes lifecycles through forked workers on the real node", () => {
  let node;
  let kubeconfigPath;
  let kubeconfig;
  const workers = [];
  const base = { driverKey: "kubernetes", companyId: "company-real-node", environmentId: "env-real" };
  const invocation = (id) => ({ invocation: { id, scope: { companyId: "company-real-node" } } });
  // A company slug (so a tenant namespace) of its own for each test: a lease one test left behind
  // cannot show up in another's listing.
  const stamp = Date.now().toString(36);
  const slugFor = (what) => `real-node-js-${what}-${stamp}`;

  /** As crates/kubernetes/tests/real_cluster/node.rs's `provider_config`: the kubeconfig inline,
   * the company slug, the backend, and the node's agent image through the default adapter's
   * registry entry (`runtimeImage`; its tag is not floating, so nothing is pulled). */
  const configFor = (slug, backend, adapter = {}) => ({
    kubeconfig,
    companySlug: slug,
    backend,
    adapters: [{ adapterType: "claude_local", runtimeImage: node.ready.images.agent, ...adapter }],
  });

  beforeAll(async () => {
    node = await startNode();
    kubeconfigPath = node.ready.kubeconfig;
    kubeconfig = await readFile(kubeconfigPath, "utf8");
  }, NODE_START_MS + 60_000);

  afterAll(async () => {
    for (const worker of workers) worker.kill();
    if (node) expect(await stopNode(node)).toBe(0);
  }, NODE_STOP_MS + 10_000);

  /** A worker forked as the host forks it, killed after the file if a test failed before its
   * own shutdown. */
  async function startWorker() {
    const worker = await ForkedWorker.start("kubernetes");
    workers.push(worker);
    return worker;
  }

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

  /** Deletion cascades in the background (the controllers, then the kubelet): waits, bounded,
   * until nothing of the lease is listed, and answers what is left. */
  const settledLeftovers = (namespace, leaseName) =>
    pollUntil(() => leftovers(namespace, leaseName), (names) => names.length === 0, { withinMs: 120_000, everyMs: 500 });

  /** The execute.log chunks of one invocation, per stream. */
  function streamed(worker, invocationId) {
    const logs = worker.rpc.notifications.filter((n) => n.method === "execute.log" && n.paperclipInvocationId === invocationId);
    const of = (stream) => logs.filter((l) => l.params.stream === stream).map((l) => l.params.chunk).join("");
    return { stdout: of("stdout"), stderr: of("stderr"), count: logs.length };
  }

  /** Release and destroy through the worker (both answer no error), nothing of the lease left,
   * no execute.log outside an invocation, no log line but the worker's start, and the worker
   * shut down with exit 0. */
  async function finish(worker, config, lease) {
    const leaseParams = { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata };
    const released = await worker.request("environmentReleaseLease", leaseParams, invocation("inv-release"));
    expect(released.error).toBeUndefined();
    const destroyed = await worker.request("environmentDestroyLease", leaseParams, invocation("inv-destroy"));
    expect(destroyed.error).toBeUndefined();
    expect(await settledLeftovers(lease.metadata.namespace, lease.providerLeaseId)).toEqual([]);
    expect(worker.rpc.notifications.filter((n) => n.method === "execute.log" && !n.paperclipInvocationId)).toEqual([]);
    // The worker logged its start and nothing else: no warning or error along the lifecycle.
    expect(worker.rpc.notifications.filter((n) => n.method === "log").map((n) => `${n.params.level}: ${n.params.message}`)).toEqual([
      "info: Kubernetes sandbox provider plugin ready",
    ]);
    const { exit } = await worker.shutdown();
    expect(exit).toEqual({ code: 0, signal: null });
  }

  it(
    "probes, acquires a sandbox-cr lease, executes with stdin and streamed output, releases and destroys it, nothing left",
    async () => {
      const worker = await startWorker();
      const slug = slugFor("cr");
      const config = configFor(slug, "sandbox-cr");
      const probe = await worker.call("environmentProbe", { ...base, config }, invocation("inv-probe"));
      expect(probe.ok, probe.summary).toBe(true);
      expect(probe.summary.split("\n")[0]).toBe(`Kubernetes cluster reachable. Tenant namespace: paperclip-${slug}.`);

      const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-real-js" }, invocation("inv-acquire"));
      expect(lease.providerLeaseId).toMatch(/^pc-/);
      // The real controller serves agents.x-k8s.io/v1beta1 only: discovery picks it.
      expect(lease.metadata).toMatchObject({
        backend: "sandbox-cr",
        namespace: `paperclip-${slug}`,
        remoteCwd: "/workspace",
        sandboxApiVersion: "v1beta1",
      });

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
        invocation("inv-execute"),
      );
      expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, stdout: "from stdin\nout\n", stderr: "err\n" });
      // The chunks reached the host as ctx.execution.log notifications of this invocation.
      const logs = streamed(worker, "inv-execute");
      expect(logs).toMatchObject({ stdout: result.stdout, stderr: result.stderr });

      await finish(worker, config, lease);
    },
    TEST_MS,
  );

  it(
    "runs a job lease: probe, acquire, the real job controller runs it, execute answers with its log, no native sync, release and destroy, nothing left",
    async () => {
      const worker = await startWorker();
      const slug = slugFor("job");
      // The host stores and validates a sandbox-cr config (its schema's `backend` enum is
      // `sandbox-cr` only, as the driver advertises the login PTY); like `npm start` and the Rust
      // real_cluster tests, the job backend is the config each hook of this lease is given.
      const stored = configFor(slug, "sandbox-cr");
      const validated = await worker.call("environmentValidateConfig", { driverKey: "kubernetes", config: stored });
      expect(validated.ok).toBe(true);
      const config = { ...stored, backend: "job" };
      const probe = await worker.call("environmentProbe", { ...base, config }, invocation("inv-probe-job"));
      expect(probe.ok, probe.summary).toBe(true);
      expect(probe.summary.split("\n")[0]).toBe(`Kubernetes cluster reachable. Tenant namespace: paperclip-${slug}.`);

      const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-real-js-job" }, invocation("inv-acquire-job"));
      expect(lease.providerLeaseId).toMatch(/^pc-/);
      expect(lease.metadata).toMatchObject({ backend: "job", namespace: `paperclip-${slug}`, nativeFileSyncUnsupported: true });
      const { namespace } = lease.metadata;
      // The Job is in the cluster, as kubectl lists it.
      expect(await leftovers(namespace, lease.providerLeaseId)).toContain(`Job/${lease.providerLeaseId}`);

      // The Job runs the image's agent shim whatever the command: execute waits for it to finish
      // and answers with its pod's log.
      const result = await worker.call(
        "environmentExecute",
        { ...base, config, lease, command: "ignored-by-the-job-backend", timeoutMs: 120_000 },
        invocation("inv-execute-job"),
      );
      expect(result).toMatchObject({ exitCode: 0, timedOut: false, stderr: "" });
      expect(result.stdout).toMatch(/^paperclip-agent-shim: job pod ran \(run [^)\n]*\)\n$/);
      expect(result.metadata).toMatchObject({ backend: "job", namespace, jobName: lease.providerLeaseId, phase: "Succeeded" });
      expect(result.metadata.podName).toMatch(new RegExp(`^${lease.providerLeaseId}-`));
      // The log reached the host as this invocation's execute.log, stdout only.
      expect(streamed(worker, "inv-execute-job")).toMatchObject({ stdout: result.stdout, stderr: "" });

      // No native sync on a Job lease: refused with the catalogued message, nothing transferred.
      const hostDir = await mkdtemp(path.join(tmpdir(), "k8s-real-job-"));
      try {
        await put(path.join(hostDir, "a.txt"), "a\n", 0o644);
        const refused = await worker.request(
          "environmentSyncIn",
          {
            ...base,
            config,
            lease,
            operations: [{ operationId: "in", files: [{ kind: "file", sourcePath: path.join(hostDir, "a.txt"), targetPath: "/workspace/a.txt" }] }],
          },
          invocation("inv-sync-job"),
        );
        expect(refused.error?.message).toBe("Kubernetes file sync is only supported on the sandbox-cr backend (lease backend: job).");
      } finally {
        await rm(hostDir, { recursive: true, force: true });
      }

      await finish(worker, config, lease);
    },
    TEST_MS,
  );

  it(
    "syncs a small tree and a file into a sandbox-cr pod and back out, byte for byte with modes; a path outside the workspace refused; nothing left",
    async () => {
      const worker = await startWorker();
      const config = configFor(slugFor("sync"), "sandbox-cr");
      const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-real-js-sync" }, invocation("inv-acquire-sync"));
      // As the published host does: sync gets the acquired lease (its remoteCwd set at acquire).
      expect(lease.metadata).toMatchObject({ backend: "sandbox-cr", remoteCwd: "/workspace" });
      const hostDir = await mkdtemp(path.join(tmpdir(), "k8s-real-sync-"));
      try {
        const src = path.join(hostDir, "src");
        await put(path.join(src, "top.txt"), "top\n", 0o644);
        await put(path.join(src, "nested/deeper/deep.bin"), Buffer.from(Array.from({ length: 256 }, (_, i) => i)), 0o640);
        await put(path.join(src, "it's a file.txt"), "spaces and a quote\n", 0o644);
        await put(path.join(src, "empty"), "", 0o644);
        await put(path.join(src, "run.sh"), "#!/bin/sh\necho ran\n", 0o755);
        const single = path.join(hostDir, "single.txt");
        await put(single, "one file\n", 0o644);

        const syncedIn = await worker.call(
          "environmentSyncIn",
          {
            ...base,
            config,
            lease,
            operations: [
              {
                operationId: "in",
                files: [
                  { kind: "file", sourcePath: single, targetPath: "/workspace/one/single.txt", mode: 0o600 },
                  { kind: "directory", sourcePath: src, targetPath: "/workspace/tree" },
                ],
              },
            ],
          },
          invocation("inv-sync-in"),
        );
        // The single file and the tree's five.
        expect(syncedIn.operations).toHaveLength(1);
        expect(syncedIn.operations[0]).toMatchObject({ operationId: "in", filesTransferred: 6 });
        expect(syncedIn.operations[0].bytesTransferred).toBeGreaterThanOrEqual(9 + 4 + 256 + 19 + 19);

        // In the pod: the same bytes (sha256sum) and modes (stat), the executable runs.
        const inPod = await worker.call(
          "environmentExecute",
          {
            ...base,
            config,
            lease,
            command: "sh",
            args: ["-c", "cd /workspace && find one tree -type f -exec sha256sum {} + && find one tree -exec stat -c 'mode %a %n' {} + && tree/run.sh"],
            timeoutMs: 120_000,
          },
          invocation("inv-check-in"),
        );
        expect(inPod).toMatchObject({ exitCode: 0, stderr: "" });
        const lines = inPod.stdout.trimEnd().split("\n");
        expect(lines.pop()).toBe("ran");
        const podHashes = Object.fromEntries(lines.filter((l) => !l.startsWith("mode ")).map((l) => [l.slice(66), l.slice(0, 64)]));
        const podModes = Object.fromEntries(lines.filter((l) => l.startsWith("mode ")).map((l) => l.slice(5).split(/ (.*)/s).slice(0, 2).reverse()));
        const sha = async (file) => createHash("sha256").update(await readFile(file)).digest("hex");
        const expectedHashes = { "one/single.txt": await sha(single) };
        // The workspace volume belongs to the pod's fsGroup, so every directory made in it is
        // setgid (2xxx) whatever mode the archive gave it; files keep their modes exactly.
        const expectedModes = { one: "2755", "one/single.txt": "600", tree: "2755" };
        for (const [rel, entry] of Object.entries(await treeOf(src))) {
          if (!entry.dir) expectedHashes[`tree/${rel}`] = await sha(path.join(src, rel));
          expectedModes[`tree/${rel}`] = entry.dir ? `2${entry.mode}` : entry.mode;
        }
        expect(podHashes).toEqual(expectedHashes);
        expect(podModes).toEqual(expectedModes);

        // Back out into fresh directories: the file (it keeps the pod's 600) and the whole tree.
        const back = path.join(hostDir, "back");
        const syncedOut = await worker.call(
          "environmentSyncOut",
          {
            ...base,
            config,
            lease,
            operations: [
              {
                operationId: "out",
                files: [
                  { kind: "file", sourcePath: "/workspace/one/single.txt", targetPath: path.join(back, "x/single.txt") },
                  { kind: "directory", sourcePath: "/workspace/tree", targetPath: path.join(back, "tree") },
                ],
              },
            ],
          },
          invocation("inv-sync-out"),
        );
        expect(syncedOut.operations).toHaveLength(1);
        expect(syncedOut.operations[0]).toMatchObject({ operationId: "out", filesTransferred: 6 });
        expect(await treeOf(path.join(back, "x"))).toEqual({ "single.txt": { mode: "600", bytes: Buffer.from("one file\n").toString("hex") } });
        expect(await treeOf(path.join(back, "tree"))).toEqual(await treeOf(src));

        // A source outside the workspace: refused with the catalogued message, nothing written.
        const refused = await worker.request(
          "environmentSyncOut",
          {
            ...base,
            config,
            lease,
            operations: [{ operationId: "escape", files: [{ kind: "directory", sourcePath: "/etc", targetPath: path.join(back, "etc") }] }],
          },
          invocation("inv-sync-escape"),
        );
        expect(refused.error?.message).toBe("Kubernetes sync source path escapes the workspace remote dir: /etc");
        expect(await readdir(back)).toEqual(["tree", "x"].sort());
      } finally {
        await rm(hostDir, { recursive: true, force: true });
      }
      // A sync is a transfer, not a command: none of its output reached the host as execute.log.
      for (const id of ["inv-sync-in", "inv-sync-out", "inv-sync-escape"]) expect(streamed(worker, id).count).toBe(0);

      await finish(worker, config, lease);
    },
    TEST_MS,
  );

  it(
    "opens login PTYs on a sandbox-cr lease: input and output, exit 3; stop and close end the process in the pod; nothing left",
    async () => {
      const worker = await startWorker();
      // The agent image has no `claude` and a read-only root: the adapter's defaultEnv puts
      // /tmp/fakebin first on PATH, and an execute writes there a stand-in that runs each line it
      // reads (a non-interactive shell, so Ctrl-C ends it as it ends a real login CLI).
      const config = configFor(slugFor("login"), "sandbox-cr", { defaultEnv: { PATH: "/tmp/fakebin:/usr/local/bin:/usr/bin:/bin" } });
      const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-real-js-login" }, invocation("inv-acquire-login"));
      let n = 0;
      const sh = async (script) => {
        const result = await worker.call(
          "environmentExecute",
          { ...base, config, lease, command: "sh", args: ["-c", script], timeoutMs: 120_000 },
          invocation(`inv-sh-${++n}`),
        );
        expect(result, script).toMatchObject({ exitCode: 0 });
        return result.stdout;
      };
      expect(
        await sh(
          "mkdir -p /tmp/fakebin && printf '%s\\n' '#!/bin/sh' 'while IFS= read -r line; do eval \"$line\"; done' > /tmp/fakebin/claude && chmod +x /tmp/fakebin/claude && command -v claude",
        ),
      ).toBe("/tmp/fakebin/claude\n");
      // The stand-ins running in the pod, told apart by their command line.
      const standIns = async () =>
        Number(
          await sh("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' 2>/dev/null <$f; echo; done | grep -cx '/bin/sh /tmp/fakebin/claude setup-token ' || true"),
        );
      const untilStandIns = (count) => pollUntil(standIns, (c) => c === count, { withinMs: EVENT_MS, everyMs: 250 });
      expect(await standIns()).toBe(0);

      const home = "/tmp/paperclip-adapter-login/3c9e1a7b-5d2f-4e8a-9b6c-1f0e2d3c4b5a";
      const open = async (hostRouteId) => {
        const opened = await worker.call("loginPtyOpen", {
          ...base,
          hostRouteId,
          providerLeaseId: lease.providerLeaseId,
          loginCommandKey: "claude",
          sessionHome: home,
        });
        expect(opened.workerSessionId).toMatch(/^pty-/);
        return { hostRouteId, workerSessionId: opened.workerSessionId };
      };
      const ofRoute = (method, ids) => worker.rpc.notifications.filter((m) => m.method === method && m.params.hostRouteId === ids.hostRouteId);
      const output = (ids) =>
        ofRoute("loginPty.output", ids)
          .map((m) => m.params.chunk)
          .join("");
      const untilOutput = (ids, text) => worker.rpc.waitForNotification(() => output(ids).includes(text), EVENT_MS);
      const input = (ids, data) => worker.call("loginPtyInput", { workerSessionId: ids.workerSessionId, data });
      const exitOf = (ids) => worker.rpc.waitForNotification((m) => m.method === "loginPty.exit" && m.params.hostRouteId === ids.hostRouteId, EVENT_MS);

      // Input reaches the stand-in through the tty and its answer comes back as loginPty.output:
      // the tty echoes `echo hello-$((6*7))`, so `hello-42` can only be the shell's answer.
      const first = await open("route-real-login-1");
      await input(first, "echo hello-$((6*7))\n");
      await untilOutput(first, "hello-42\r\n");
      expect(output(first)).toContain("echo hello-$((6*7))\r\n");
      expect(await sh(`test -d ${home} && echo made`)).toBe("made\n");
      expect(await standIns()).toBe(1);
      // `exit 3`: the session ends once, with that code.
      await input(first, "exit 3\n");
      expect((await exitOf(first)).params).toEqual({ ...first, exitCode: 3 });
      expect(await untilStandIns(0)).toBe(0);
      expect(await worker.call("loginPtyClose", first)).toEqual({ hostRouteId: first.hostRouteId });

      // Stop: the session exits with no code, and the stand-in in the pod ends.
      const second = await open("route-real-login-2");
      await input(second, "echo second-$((1+1))\n");
      await untilOutput(second, "second-2\r\n");
      expect(await standIns()).toBe(1);
      expect(await worker.request("loginPtyStop", { workerSessionId: second.workerSessionId })).not.toHaveProperty("error");
      expect((await exitOf(second)).params).toEqual({ ...second, exitCode: null });
      expect(await untilStandIns(0)).toBe(0);
      expect(await worker.call("loginPtyClose", second)).toEqual({ hostRouteId: second.hostRouteId });

      // Close of the route: no exit reported, and the stand-in in the pod ends.
      const third = await open("route-real-login-3");
      await input(third, "echo third-$((1+2))\n");
      await untilOutput(third, "third-3\r\n");
      expect(await standIns()).toBe(1);
      expect(await worker.call("loginPtyClose", third)).toEqual({ hostRouteId: third.hostRouteId });
      expect(await untilStandIns(0)).toBe(0);

      // Each session's notifications carry its own ids; one exit each for the first two, none
      // for the closed one.
      for (const ids of [first, second, third]) {
        for (const m of worker.rpc.notifications.filter((x) => x.method.startsWith("loginPty.") && x.params.hostRouteId === ids.hostRouteId)) {
          expect(m.params.workerSessionId).toBe(ids.workerSessionId);
        }
      }
      expect([first, second, third].map((ids) => ofRoute("loginPty.exit", ids).length)).toEqual([1, 1, 0]);

      await finish(worker, config, lease);
      // Nothing more reached the host after the close.
      expect(ofRoute("loginPty.exit", third)).toEqual([]);
    },
    TEST_MS,
  );
});
