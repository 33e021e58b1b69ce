#!/usr/bin/env node
// `npm run bench:readiness`: the Sandbox ready-wait on the real node (issue #37), its own group,
// apart from `npm run bench` (it needs root and the real node of `tests/real_cluster`, and takes
// a few minutes): the provider's time over the pod's own Ready transition, p50 and p95 over 20
// leases, beside the original's 2 s poll. The measuring is Rust
// (crates/kubernetes/benches/readiness_real_node.rs, the provider in process, as the worker runs
// it); this file runs it. Results: bench/results/readiness-real-node.{json,md}.
//
//   node bench/readiness.js            PAPERCLIP_BENCH_LEASES=5 node bench/readiness.js (a smoke run)

import { spawnSync } from "node:child_process";

import { repoRoot } from "../scripts/lib/paths.js";

const result = spawnSync("cargo", ["bench", "-p", "kubernetes", "--bench", "readiness_real_node"], {
  cwd: repoRoot,
  stdio: "inherit",
});
process.exit(result.status ?? 1);
