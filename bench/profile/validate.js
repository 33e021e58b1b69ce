#!/usr/bin/env node
// Profiling driver: one hook straight into the addon, in process (no worker, no JSON-RPC), through
// plugin-kit's `invoke` as the plugin workers call it, so a profiler sees only the native call and
// its boundary.
//
//   node bench/profile/validate.js <createos|kubernetes> <calls> [validate|health]
//
// `validate` (the default) is `environmentValidateConfig` on a valid config; `health` is the
// trivial hook through the same path (params in, outcome back, the same dispatch), so the
// difference of the two is the provider's own validation work and `health` alone is the
// bridge's fixed cost.
//
// Instructions per call, repeatable on a shared VM (callgrind counts, it does not time):
//   valgrind --tool=callgrind node bench/profile/validate.js createos 0      # start-up only
//   valgrind --tool=callgrind node bench/profile/validate.js createos 3000   # + 3000 calls
//   (difference of the two "Collected" totals) / 3000
// Where the time goes: perf record -g node bench/profile/validate.js createos 200000

import { NativeProvider } from "paperclip-sandbox-native";
import { invoke } from "paperclip-sandbox-native/plugin-kit";

const [provider = "createos", callsArg = "100000", hookArg = "validate"] = process.argv.slice(2);
const calls = Number(callsArg);
const hook = hookArg === "health" ? "onHealth" : "onEnvironmentValidateConfig";

// Shaped like the Kubernetes emulator's kubeconfig, which the bench validates: an embedded CA
// (an ECDSA CA's PEM, base64: ~800 characters; filler here, the schema does not read it).
const caData = Buffer.from("-----BEGIN CERTIFICATE-----\n" + "M".repeat(560) + "\n-----END CERTIFICATE-----\n").toString("base64");
const kubeconfig = [
  "apiVersion: v1",
  "kind: Config",
  "clusters:",
  "- name: emulator",
  "  cluster:",
  "    server: https://127.0.0.1:6443",
  `    certificate-authority-data: ${caData}`,
  "users:",
  "- name: emulator",
  "  user:",
  '    token: "profile-token"',
  "contexts:",
  "- name: emulator",
  "  context:",
  "    cluster: emulator",
  "    user: emulator",
  "    namespace: default",
  "current-context: emulator",
  "preferences: {}",
  "",
].join("\n");
const params =
  hook === "onHealth"
    ? undefined
    : provider === "createos"
      ? { driverKey: "createos", config: { apiUrl: "http://127.0.0.1:1234", apiKey: "profile-key", shape: "s-1vcpu-1gb" } }
      : { driverKey: "kubernetes", config: { kubeconfig, companySlug: "acme", backend: "sandbox-cr", egressMode: "cilium" } };
const native = provider === "createos" ? NativeProvider.createos() : NativeProvider.kubernetes();

// What a plugin-kit hook does per call: params in through the provider's hook caller (the addon
// reads or stringifies them), the outcome settled, one call at a time.
const callHook = native.hookCaller();
const call = () => invoke(() => callHook(hook, params));
const first = await call();
const ok = hook === "onHealth" ? first?.status === "ok" : first?.ok === true;
if (!ok) throw new Error(`${hook} failed: ${JSON.stringify(first)}`);

for (let i = 0; i < 5000; i++) await call(); // JIT warm-up, the same for every run
const t0 = performance.now();
for (let i = 0; i < calls; i++) await call();
const elapsed = performance.now() - t0;
if (calls > 0) console.log(`${provider} ${hook}: ${((elapsed * 1000) / calls).toFixed(2)} us/call (wall, in process)`);
