// Kubernetes sandbox-provider plugin: `createPlugin()` builds a fresh plugin, as the
// original's does.
// Each call gets its own native provider (crates/kubernetes) and its own ctx bridge, so its leases,
// sessions and caches are its own; every hook forwards its params to that provider and returns its
// promise. The hook list is exactly what the Rust side implements, because the host routes traffic
// by the methods a worker advertises.

import { definePlugin } from "@paperclipai/plugin-sdk";
import { createHostBridge, loadNative, nativePluginDefinition } from "paperclip-sandbox-native/plugin-kit";

const { KubernetesProvider } = await loadNative({ plugin: import.meta.url });

const HOOKS = [
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
];

/** A fresh plugin: its own native provider, leases, sessions and caches. */
export function createPlugin() {
  const host = createHostBridge();
  const provider = new KubernetesProvider(host.callbacks);
  return definePlugin(nativePluginDefinition(provider, host, HOOKS));
}

// The default export is one instance, as the original's is (the worker serves this one).
export default createPlugin();
