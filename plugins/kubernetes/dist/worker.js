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
  },
  async onHealth() {
    return invoke(() => provider.health());
  },
  async onEnvironmentValidateConfig(params) {
    return invoke(() => provider.validateConfig(params));
  },
});

export default plugin;
runWorker(plugin, import.meta.url);
