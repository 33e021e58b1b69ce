// `npm start`: the main job on the embedded emulators. Starts the local CreateOS and
// Kubernetes API emulators, forks each plugin's worker exactly as the Paperclip host does, and
// runs a lease lifecycle on each (Kubernetes on both backends), printing a transcript. Exits 0
// with nothing left running, or 1 if any step failed.

import { readFile } from "node:fs/promises";

import { startEmulator } from "./lib/emulators.js";
import { ForkedWorker } from "./lib/forked-worker.js";
import { Transcript } from "./lib/transcript.js";

const transcript = new Transcript();
const companyId = "demo-company";
const base = (driverKey) => ({ driverKey, companyId, environmentId: "demo-env" });
let invocations = 0;
const invocation = () => ({ invocation: { id: `demo-${++invocations}`, scope: { companyId } } });

/** Runs an execute call, printing each execute.log chunk of it the moment it arrives. */
async function executeLive(worker, params) {
  const call = invocation();
  const stop = worker.rpc.onNotification((note) => {
    if (note.method !== "execute.log" || note.paperclipInvocationId !== call.invocation.id) return;
    for (const line of note.params.chunk.split("\n").filter(Boolean)) transcript.note(`[${note.params.stream}] ${line}`);
  });
  try {
    return await worker.call("environmentExecute", params, call);
  } finally {
    stop();
  }
}

async function createosLifecycle(emulator) {
  transcript.section(`CreateOS (emulator at ${emulator.url})`);
  const config = { apiUrl: emulator.url, apiKey: emulator.apiKey, shape: "s-1vcpu-1gb" };
  const worker = await transcript.step("fork plugins/createos/dist/worker.js and initialize", () => ForkedWorker.start("createos"));
  try {
    await transcript.step("validate config", () => worker.call("environmentValidateConfig", { driverKey: "createos", config }), (r) => `ok=${r.ok}`);
    await transcript.step("probe", () => worker.call("environmentProbe", { ...base("createos"), config }, invocation()), (r) => r.summary);
    const lease = await transcript.step(
      "acquire lease",
      () => worker.call("environmentAcquireLease", { ...base("createos"), config, runId: "demo-run" }, invocation()),
      (l) => `sandbox ${l.providerLeaseId}`,
    );
    await transcript.step("realize workspace", () =>
      worker.call("environmentRealizeWorkspace", { ...base("createos"), config, lease, workspace: {} }, invocation()),
    (r) => `cwd ${r.cwd}`);
    await transcript.step(
      "execute (output streams live)",
      () =>
        executeLive(worker, {
          ...base("createos"),
          config,
          lease,
          command: "bash",
          args: ["-c", 'echo "hello from $(uname -s) in $PWD"; for i in 1 2 3; do echo "step $i"; done'],
          cwd: "/paperclip-workspace",
        }),
      (r) => `exit ${r.exitCode}`,
    );
    await transcript.step("release lease", () =>
      worker.call("environmentReleaseLease", { ...base("createos"), config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, invocation()),
    );
  } finally {
    const { exit } = await transcript.step("shutdown", () => worker.shutdown(), ({ exit: e }) => `worker exited with ${e.code}`);
    if (exit.code !== 0) transcript.failures += 1;
  }
}

async function kubernetesLifecycle(emulator) {
  transcript.section(`Kubernetes (emulator at ${emulator.url})`);
  const kubeconfig = await readFile(emulator.kubeconfig, "utf8");
  const configFor = (backend) => ({ kubeconfig, companySlug: "demo", backend, egressMode: "cilium" });
  const worker = await transcript.step("fork plugins/kubernetes/dist/worker.js and initialize", () => ForkedWorker.start("kubernetes"));
  try {
    await transcript.step("validate config", () =>
      worker.call("environmentValidateConfig", { driverKey: "kubernetes", config: configFor("sandbox-cr") }),
    (r) => `ok=${r.ok}`);
    await transcript.step("probe", () => worker.call("environmentProbe", { ...base("kubernetes"), config: configFor("sandbox-cr") }, invocation()), (r) => r.summary);
    for (const backend of ["sandbox-cr", "job"]) {
      const config = configFor(backend);
      const lease = await transcript.step(
        `[${backend}] acquire lease`,
        () => worker.call("environmentAcquireLease", { ...base("kubernetes"), config, runId: `demo-${backend}` }, invocation()),
        (l) => `${l.metadata.namespace}/${l.providerLeaseId}`,
      );
      if (backend === "sandbox-cr") {
        await transcript.step(`[${backend}] realize workspace`, () =>
          worker.call("environmentRealizeWorkspace", { ...base("kubernetes"), config, lease, workspace: {} }, invocation()),
        (r) => `cwd ${r.cwd}`);
      }
      await transcript.step(
        `[${backend}] execute (output streams live)`,
        () =>
          executeLive(worker, {
            ...base("kubernetes"),
            config,
            lease,
            command: "sh",
            args: ["-c", 'echo "hello from pod $(hostname)"; for i in 1 2 3; do echo "step $i"; done'],
            timeoutMs: 60_000,
          }),
        (r) => `exit ${r.exitCode}`,
      );
      await transcript.step(`[${backend}] release lease`, () =>
        worker.call("environmentReleaseLease", { ...base("kubernetes"), config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, invocation()),
      );
    }
  } finally {
    const { exit } = await transcript.step("shutdown", () => worker.shutdown(), ({ exit: e }) => `worker exited with ${e.code}`);
    if (exit.code !== 0) transcript.failures += 1;
  }
}

const emulators = [];
try {
  transcript.section("Starting the local emulators");
  const createos = await transcript.step("CreateOS API emulator", () => startEmulator("createos-emulator", ["--transition-ms", "50"]));
  emulators.push(createos);
  const kubernetes = await transcript.step("Kubernetes API emulator", () =>
    startEmulator("kubernetes-emulator", [
      "--fast",
      "--command-override",
      `/usr/local/bin/paperclip-agent-shim=${JSON.stringify(["/bin/sh", "-c", "echo job pod ran its command"])}`,
    ]),
  );
  emulators.push(kubernetes);
  await createosLifecycle(createos).catch(() => {});
  await kubernetesLifecycle(kubernetes).catch(() => {});
} catch {
  // Already reported by the transcript.
} finally {
  for (const emulator of emulators) await emulator.stop();
}
console.log(transcript.failures === 0 ? "\nAll steps succeeded; nothing left running." : `\n${transcript.failures} step(s) failed.`);
process.exitCode = transcript.failures === 0 ? 0 : 1;
