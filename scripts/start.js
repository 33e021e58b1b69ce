// `npm start`: fork each plugin's worker exactly as the Paperclip host does and walk it through
// what works today (initialize, health, config validation, shutdown), printing a transcript.
// Later stages add the embedded emulators and full lease lifecycles.

import { performance } from "node:perf_hooks";

import { ForkedWorker } from "./lib/forked-worker.js";

const providers = [
  {
    plugin: "createos",
    driverKey: "createos",
    good: { apiUrl: "https://api.sb.createos.sh", shape: "s-1vcpu-1gb" },
    bad: { apiUrl: "http://example.com", shape: "s-1vcpu-1gb" },
  },
  {
    plugin: "kubernetes",
    driverKey: "kubernetes",
    good: { inCluster: true, egressMode: "cilium", backend: "sandbox-cr" },
    bad: { inCluster: true, backend: "docker" },
  },
];

async function step(label, work) {
  const started = performance.now();
  const result = await work();
  const ms = (performance.now() - started).toFixed(1);
  console.log(`  ✓ ${label} (${ms} ms)`);
  return result;
}

function show(value) {
  console.log(`      ${JSON.stringify(value)}`);
}

let failed = false;
for (const provider of providers) {
  console.log(`\n${provider.plugin}: forking plugins/${provider.plugin}/dist/worker.js`);
  let worker;
  try {
    worker = await step("initialize", () => ForkedWorker.start(provider.plugin));
    show(worker.initializeResult);
    show(await step("health", () => worker.call("health", {})));
    const good = await step("validate a good config", () =>
      worker.call("environmentValidateConfig", { driverKey: provider.driverKey, config: provider.good }),
    );
    if (!good.ok) throw new Error(`a good config was rejected: ${JSON.stringify(good)}`);
    show(good);
    const bad = await step("validate a bad config", () =>
      worker.call("environmentValidateConfig", { driverKey: provider.driverKey, config: provider.bad }),
    );
    if (bad.ok) throw new Error("a bad config was accepted");
    show(bad);
    const { exit } = await step("shutdown", () => worker.shutdown());
    if (exit.code !== 0) throw new Error(`worker exited with ${JSON.stringify(exit)}`);
    console.log(`      worker exited with code ${exit.code}`);
  } catch (error) {
    failed = true;
    console.error(`  ✗ ${provider.plugin}: ${error.message}`);
    if (worker?.stderr) console.error(worker.stderr);
    worker?.kill();
  }
}
process.exitCode = failed ? 1 : 0;
