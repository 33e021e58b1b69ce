// CreateOS sandbox-provider plugin: `createPlugin()` builds a fresh plugin, as the
// original's does.
// Each call gets its own native provider (crates/createos) and its own ctx bridge, so its leases,
// sessions and caches are its own; every hook forwards its params to that provider and returns its
// promise. The hook list is exactly what the Rust side implements, because the host routes traffic
// by the methods a worker advertises.

import { definePlugin } from "@paperclipai/plugin-sdk";
import { createHostBridge, loadNative, nativePluginDefinition } from "paperclip-sandbox-native/plugin-kit";

const { CreateOsProvider } = await loadNative({ plugin: import.meta.url });

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
  "onEnvironmentStartInteractiveSetup",
  "onEnvironmentGetInteractiveSetup",
  "onEnvironmentCancelInteractiveSetup",
  "onEnvironmentCaptureTemplate",
  "onEnvironmentDeleteTemplate",
  "onLoginPtyOpen",
  "onLoginPtyInput",
  "onLoginPtyStop",
  "onLoginPtyClose",
  "onDuplexChannelOpen",
  "onDuplexChannelWrite",
  "onDuplexChannelStop",
  "onDuplexChannelClose",
];

/** A fresh plugin: its own native provider, leases, sessions and caches. */
export function createPlugin() {
  const host = createHostBridge();
  const provider = new CreateOsProvider(host.callbacks);
  return definePlugin(nativePluginDefinition(provider, host, HOOKS));
}

// The default export is one instance, as the original's is (the worker serves this one).
export default createPlugin();
