#!/usr/bin/env node
// Where the addon's own share of a cold start goes, in callgrind instructions: runs
// bench/lib/addon-load.js --sync under callgrind (collecting only inside its load window),
// keeps the profile, and prints the inclusive cost of the steps that matter: compiling the
// ES modules (plugin-kit), dlopen and its relocations, module
// registration (napi's symbol table, our module_init and its runtime), the two constructors.
//
//   node bench/profile/cold-start.js [profile-out]
//
// Point NAPI_RS_NATIVE_LIBRARY_PATH at an unstripped build (a file ending in .node) to see the
// addon's own functions by name; a stripped one still gives every step but the last two rows.

import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { callgrind } from "../lib/callgrind.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(process.argv[2] ?? "callgrind.addon-load.out");
const { instructions } = await callgrind(process.execPath, [path.join(here, "../lib/addon-load.js"), "--sync"], {
  toggle: "node::contextify::ContextifyScript::RunInContext*",
  keep: out,
});

const STEPS = [
  ["compile ES module text (plugin-kit)", /node::loader::ModuleWrap::CompileSourceTextModule\(/],
  ["compile functions on first call (lazy)", /v8::internal::Runtime_CompileLazy\(/],
  ["dlopen + module registration (node::binding::DLOpen)", /node::binding::DLOpen\(v8::FunctionCallbackInfo<v8::Value> const&\) \[/],
  ["  relocations (_dl_relocate_object)", /elf\/dl-reloc\.c:_dl_relocate_object /],
  ["  static constructors (_dl_init)", /elf\/dl-init\.c:_dl_init /],
  ["  napi_register_module_v1", /:napi_register_module_v1 /],
  ["    napi's symbol table (napi_sys::setup)", /napi_sys::setup /],
  ["    module_init: runtime and allocator (runtime::install)", /paperclip_sandbox_native::runtime::install /],
  // `NativeProvider.createos` / `.kubernetes` (napi-rs names the glue `<method>_c_callback`).
  ["  the two constructors", /NativeProvider\S*::(createos|kubernetes)_c_callback |::new_c_callback /],
];
const annotated = execFileSync("callgrind_annotate", ["--inclusive=yes", "--threshold=100", out], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 }).split("\n");
console.log(`window total: ${instructions.toLocaleString("en-US")} instructions (profile: ${out})`);
for (const [label, pattern] of STEPS) {
  // Recursive frames ('2) double-count; take the outermost frame's line.
  const hits = annotated.filter((line) => pattern.test(line) && !/'\d+ \[/.test(line));
  const sum = hits.reduce((total, line) => total + Number(line.trim().split(/\s+/)[0].replaceAll(",", "")), 0);
  console.log(`${label.padEnd(60)} ${hits.length ? sum.toLocaleString("en-US").padStart(12) : "           -"}`);
}
