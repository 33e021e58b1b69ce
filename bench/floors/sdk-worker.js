// Floor 2: an SDK-only worker: definePlugin + runWorker, hooks that do nothing (validate hands its
// config back), and an execute hook that emits synthetic `execute.log` chunks through
// ctx.execution.log, so the bench can separate the SDK's own cost from the provider's.
//
// Execute params (bench-only): `args: [totalBytes, chunkBytes, delayMs?]` (strings, as the host
// sends); delayMs stands in for a command's run time before its output (the stall figure uses it).

import { once } from "node:events";
import { setTimeout as delay } from "node:timers/promises";

import { definePlugin, runWorker } from "@paperclipai/plugin-sdk";

let ctx = null;

const plugin = definePlugin({
  async setup(next) {
    ctx = next;
  },
  async onHealth() {
    return { status: "ok" };
  },
  async onShutdown() {},
  // The config handed back as `normalizedConfig`: the least a plugin can do that honours the
  // contract's reply, so the SDK's stringify of a reply carrying the config is in the floor.
  async onEnvironmentValidateConfig(params) {
    return { ok: true, normalizedConfig: params?.config };
  },
  async onEnvironmentExecute(params) {
    const [total, chunk, delayMs = 0] = (params.args ?? []).map(Number);
    if (delayMs > 0) await delay(delayMs);
    const piece = "a".repeat(chunk);
    let sent = 0;
    while (sent < total) {
      ctx.execution.log("stdout", piece);
      sent += chunk;
      // Honour the pipe's backpressure, as any real producer must.
      if (process.stdout.writableNeedDrain) await once(process.stdout, "drain");
    }
    return { exitCode: 0, signal: null, timedOut: false, stdout: "", stderr: "" };
  },
});

export default plugin;
runWorker(plugin, import.meta.url);
