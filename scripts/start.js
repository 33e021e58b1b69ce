// `npm start`: the main job on the embedded emulators. Starts the local CreateOS and
// Kubernetes API emulators, forks each plugin's worker exactly as the Paperclip host does, and
// runs a lease lifecycle on each (validate, probe, acquire, realize, sync in, execute with live
// output, sync out, release; Kubernetes on both backends) through lib/lifecycle.js, the
// implementation `paperclip-sandbox check` shares. Exits 0 with nothing left running, 1 if any
// step failed, 130 on Ctrl-C (after cleaning up).

import { readFile } from "node:fs/promises";

import { startEmulator } from "../lib/emulators.js";
import { EMULATOR_ARGS, Lifecycle, Reporter, onCtrlC } from "../lib/lifecycle.js";

const reporter = new Reporter();
const emulators = [];
let current = null;
let interrupted = false;
const stopEmulators = async () => {
  for (const emulator of emulators.splice(0)) await emulator.stop();
};
const removeHandler = onCtrlC(
  () => {
    interrupted = true;
    current?.interrupt();
  },
  () => {
    current?.kill();
    for (const emulator of emulators) emulator.child.kill("SIGKILL");
    process.exit(130);
  },
);

try {
  reporter.section("Starting the local emulators");
  const createos = await reporter.step("CreateOS API emulator", () => startEmulator("createos-emulator", EMULATOR_ARGS.createos));
  emulators.push(createos);
  const kubernetes = await reporter.step("Kubernetes API emulator", () => startEmulator("kubernetes-emulator", EMULATOR_ARGS.kubernetes));
  emulators.push(kubernetes);
  reporter.addSecrets([createos.apiKey]);

  const runs = [
    {
      title: `CreateOS (emulator at ${createos.url})`,
      options: { provider: "createos", config: { apiUrl: createos.url, apiKey: createos.apiKey, shape: "s-1vcpu-1gb" } },
    },
    {
      title: `Kubernetes (emulator at ${kubernetes.url})`,
      options: {
        provider: "kubernetes",
        config: { kubeconfig: await readFile(kubernetes.kubeconfig, "utf8"), companySlug: "demo", egressMode: "cilium" },
        backends: ["sandbox-cr", "job"],
      },
    },
  ];
  for (const { title, options } of runs) {
    if (interrupted) break;
    reporter.section(title);
    // A terminal's Ctrl-C also stops the emulators, which remove their sandboxes on exit.
    const targetGone = () => emulators.some((emulator) => emulator.child.exitCode !== null || emulator.child.signalCode !== null);
    current = new Lifecycle({ ...options, reporter, targetGone, companyId: "demo-company", environmentId: "demo-env", runId: "demo" });
    await current.run();
  }
} catch {
  // Already reported by the transcript.
} finally {
  await stopEmulators();
  removeHandler();
}
if (interrupted) console.log("\nInterrupted; cleaned up, nothing left running.");
else console.log(reporter.failures === 0 ? "\nAll steps succeeded; nothing left running." : `\n${reporter.failures} step(s) failed.`);
process.exitCode = interrupted ? 130 : reporter.failures === 0 ? 0 : 1;
