// CreateOS sandbox-provider worker: the file the Paperclip host forks. Every hook forwards its
// params to the native provider (crates/createos) and returns its promise; nothing is decided
// here. The list below is exactly what the Rust side implements, because the host routes
// traffic by the methods a worker advertises.

import { definePlugin, runWorker } from "@paperclipai/plugin-sdk";
import { createHostBridge, loadNative, nativePluginDefinition } from "paperclip-sandbox-native/plugin-kit";

const { CreateOsProvider } = await loadNative();
const host = createHostBridge();
const provider = new CreateOsProvider(host.callbacks);

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
  ]),
);

export default plugin;
runWorker(plugin, import.meta.url);
