// The addon's own share of a worker's cold start, measured inside one fresh Node process: from
// the worker's import of the native package (plugin-kit, then its loader: dlopen of the platform
// `.node` and module registration) to both providers constructed with their host bridges, as the plugin
// workers do it. Prints one JSON line: wall time of each step (ms) and what the load added to
// VmRSS / RssAnon / RssFile (KiB).
//
//   node bench/lib/addon-load.js           `await import`, as the workers load it (timing, RSS)
//   node bench/lib/addon-load.js --sync    the same load synchronously (`require` of plugin-kit,
//                                          `loadNativeSync`) inside one `vm.Script#runInThisContext`
//                                          call, so that callgrind can count exactly that call:
//                                          --toggle-collect='node::contextify::ContextifyScript::RunInContext*'
//   add --none                             the same process without the load (the baseline)
//
// Run by bench/figures/cold-start.js (a fresh process per sample, and under
// `valgrind --tool=callgrind` for instruction counts); it can also be run by hand.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import vm from "node:vm";

// The plugin workers import the SDK before plugin-kit (ESM evaluation order of dist/plugin.js),
// so Node's module loader and the builtins they share are warm when the addon's import starts.
import "@paperclipai/plugin-sdk";

const status = () => {
  const text = readFileSync("/proc/self/status", "utf8");
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN);
  return { rss: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile") };
};

const none = process.argv.includes("--none");
const sync = process.argv.includes("--sync");
const require = createRequire(import.meta.url);
const marks = {};

/** Each plugin worker constructs its provider with a host bridge; this process holds both. */
function construct(kit, native) {
  const createos = native.NativeProvider.createos(kit.createHostBridge().callbacks);
  const kubernetes = native.NativeProvider.kubernetes(kit.createHostBridge().callbacks);
  globalThis.__providers = [createos, kubernetes];
}

// The plugins load the addon with their own URL, which adds the check of the native package's
// version against the plugin's dependency.
const plugin = new URL("../../plugins/createos/dist/plugin.js", import.meta.url).href;

async function loadAsync() {
  const kit = await import("paperclip-sandbox-native/plugin-kit");
  marks.kit = performance.now();
  const native = await kit.loadNative({ plugin });
  marks.addon = performance.now();
  construct(kit, native);
}

globalThis.__benchLoadSync = () => {
  const kit = require("paperclip-sandbox-native/plugin-kit");
  marks.kit = performance.now();
  // What loadNative does, without its promise.
  const native = kit.loadNativeSync({ plugin });
  marks.addon = performance.now();
  construct(kit, native);
};
// Compiled before the window opens; with --none the window holds nothing but the call itself.
const window = new vm.Script(none ? "undefined" : "globalThis.__benchLoadSync()");

// Warm the measuring itself (the first /proc read and regex touch Node's own pages).
status();
JSON.stringify(status());
const before = status();
const t0 = performance.now();
if (sync) window.runInThisContext();
else if (!none) await loadAsync();
const t1 = performance.now();
const after = status();
// Without the load there are no steps to split.
const split = (from, to) => (marks.addon === undefined ? 0 : to - from);
process.stdout.write(
  `${JSON.stringify({
    mode: `${none ? "none" : "load"}${sync ? "-sync" : ""}`,
    ms: t1 - t0,
    pluginKitMs: split(t0, marks.kit),
    addonImportMs: split(marks.kit, marks.addon),
    constructMs: split(marks.addon, t1),
    rssKiB: after.rss - before.rss,
    anonKiB: after.anon - before.anon,
    fileKiB: after.file - before.file,
  })}\n`,
);
