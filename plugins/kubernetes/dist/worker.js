// Kubernetes sandbox-provider worker: the file the Paperclip host forks. Each hook forwards its
// params to the native provider (crates/kubernetes) and returns its promise; nothing is decided
// here. Only hooks the Rust side implements are defined, because the host routes traffic by
// the methods a worker advertises.

import { definePlugin, runWorker } from "@paperclipai/plugin-sdk";
import { createHostBridge, invoke, loadNative } from "paperclip-sandbox-native/plugin-kit";

const { KubernetesProvider } = await loadNative();
const host = createHostBridge();
const provider = new KubernetesProvider(host.callbacks);

const plugin = definePlugin({
  async setup(ctx) {
    host.attach(ctx);
    await invoke(() => provider.setup());
  },
  async onHealth() {
    return invoke(() => provider.health());
  },
  async onEnvironmentValidateConfig(params) {
    return invoke(() => provider.validateConfig(params));
  },
  async onEnvironmentProbe(params) {
    return invoke(() => provider.probe(params));
  },
  async onEnvironmentAcquireLease(params) {
    return invoke(() => provider.acquireLease(params));
  },
  async onEnvironmentResumeLease(params) {
    return invoke(() => provider.resumeLease(params));
  },
  async onEnvironmentReleaseLease(params) {
    return invoke(() => provider.releaseLease(params));
  },
  async onEnvironmentDestroyLease(params) {
    return invoke(() => provider.destroyLease(params));
  },
  async onEnvironmentRealizeWorkspace(params) {
    return invoke(() => provider.realizeWorkspace(params));
  },
  async onEnvironmentExecute(params) {
    return invoke(() => provider.execute(params, host.executionLog()));
  },
  async onShutdown() {
    await invoke(() => provider.shutdown());
    host.detach();
  },
});

export default plugin;
runWorker(plugin, import.meta.url);
