#!/usr/bin/env node
// Profiling driver: `environmentValidateConfig` straight into the addon, in process (no worker,
// no JSON-RPC), so a profiler sees only the native call and its JSON boundary.
//
//   node bench/profile/validate.js <createos|kubernetes> <calls>
//
// Instructions per call, repeatable on a shared VM (callgrind counts, it does not time):
//   valgrind --tool=callgrind node bench/profile/validate.js createos 0      # start-up only
//   valgrind --tool=callgrind node bench/profile/validate.js createos 3000   # + 3000 calls
//   (difference of the two "Collected" totals) / 3000
// Where the time goes: perf record -g node bench/profile/validate.js createos 200000

import { NativeProvider } from "paperclip-sandbox-native";

const [provider = "createos", callsArg = "100000"] = process.argv.slice(2);
const calls = Number(callsArg);

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
  name: c
contexts:
- context: {cluster: c, user: u}
  name: x
current-context: x
users:
- name: u
  user: {token: profile-token}
`;
const params =
  provider === "createos"
    ? { driverKey: "createos", config: { apiUrl: "http://127.0.0.1:1234", apiKey: "profile-key", shape: "s-1vcpu-1gb" } }
    : { driverKey: "kubernetes", config: { kubeconfig, companySlug: "acme", backend: "sandbox-cr", egressMode: "cilium" } };
const native = provider === "createos" ? NativeProvider.createos() : NativeProvider.kubernetes();

// What plugin-kit does per call: params in (the addon stringifies them), the outcome back as
// JSON text, one call at a time.
const validate = async () => JSON.parse(await native.call("onEnvironmentValidateConfig", params));
const first = await validate();
if (first.value?.ok !== true) throw new Error(`validate failed: ${JSON.stringify(first)}`);

for (let i = 0; i < 5000; i++) await validate(); // JIT warm-up, the same for every run
const t0 = performance.now();
for (let i = 0; i < calls; i++) await validate();
const elapsed = performance.now() - t0;
if (calls > 0) console.log(`${provider} validateConfig: ${((elapsed * 1000) / calls).toFixed(2)} us/call (wall, in process)`);
