// Kubernetes sandbox-provider plugin: `createPlugin()` builds a fresh plugin, as the original's
// does, with its own native provider (crates/kubernetes) and ctx bridge, so its leases, sessions
// and caches are its own. The hooks are the Rust hook table's (plugin-kit).

import { definePlugin } from "@paperclipai/plugin-sdk";
import { loadNative, nativePlugin } from "paperclip-sandbox-native/plugin-kit";

const { NativeProvider } = await loadNative({ plugin: import.meta.url });

/** A fresh plugin: its own native provider, leases, sessions and caches. */
export const createPlugin = () => nativePlugin(definePlugin, (host) => NativeProvider.kubernetes(host));

// The default export is one instance, as the original's is (the worker serves this one).
export default createPlugin();
