// Kubernetes sandbox-provider worker: the file the Paperclip host forks. Every hook forwards its
// params to the native provider (crates/kubernetes) and returns its promise; nothing is decided
// here. The list below is exactly what the Rust side implements, because the host routes
// traffic by the methods a worker advertises.

import { definePlugin, runWorker } from "@paperclipai/plugin-sdk";
import { createHostBridge, loadNative, nativePluginDefinition } from "paperclip-sandbox-native/plugin-kit";

const { KubernetesProvider } = await loadNative();
const host = createHostBridge();
const provider = new KubernetesProvider(host.callbacks);

const plugin = definePlugin(
  nativePluginDefinition(provider, host, [
    "onHealth",
    "onEnvironmentValidateConfig",
    "onEnvironmentProbe",
    "onEnvironmentAcquireLease",
    "onEnvironmentResumeLease",
    "onEnvironmentReleaseLease",
    "onEnvironmentDestroyLease",
    "onEnvironmentRealizeWorkspace",
    "onEnvironmentExecute",
    "onEnvironmentSyncIn",
    "onEnvironmentSyncOut",
    "onLoginPtyOpen",
    "onLoginPtyInput",
    "onLoginPtyStop",
    "onLoginPtyClose",
  ]),
);

export default plugin;
runWorker(plugin, import.meta.url);
