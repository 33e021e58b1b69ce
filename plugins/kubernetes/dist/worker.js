// Kubernetes sandbox-provider worker: the file the Paperclip host forks. The plugin instance
// of dist/plugin.js, served over the SDK's JSON-RPC host; nothing is decided here.

import { runWorker } from "@paperclipai/plugin-sdk";

import plugin from "./plugin.js";

export default plugin;
runWorker(plugin, import.meta.url);
