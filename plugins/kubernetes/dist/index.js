// Package entry: `createPlugin()` (a fresh plugin per call), the worker's own instance as the
// default export, and the manifest. Importing it does not start the RPC host; only forking
// dist/worker.js does.
export { createPlugin } from "./plugin.js";
export { default } from "./worker.js";
export { default as manifest } from "./manifest.js";
