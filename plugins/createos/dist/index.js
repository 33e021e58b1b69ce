// Package entry: the plugin (for tests and tooling) and its manifest. Importing it does not start
// the RPC host; only forking dist/worker.js does.
export { default } from "./worker.js";
export { default as manifest } from "./manifest.js";
