#!/usr/bin/env node
// `npm run bench:leases`: twenty leases at once (issue #38 item 3), its own group, apart from
// `npm run bench` (it needs root and the real node of `tests/real_cluster`, and takes a few
// minutes): one worker, twenty concurrent sandbox-cr leases (acquire, a streaming execute of
// 1 MiB, a sync in and out of 1 MiB, release), on the emulator and on the real node: acquire
// p50/p95, the first execute over the pod's own Ready transition, the worker's CPU time and peak
// RSS. The measuring is Rust (crates/kubernetes/benches/twenty_leases.rs, the provider in
// process, as the worker runs it); this file runs it. Results: bench/results/twenty-leases.{json,md}.
//
//   node bench/leases.js     PAPERCLIP_BENCH_TARGETS=emulator node bench/leases.js (the emulator only)

import { spawnSync } from "node:child_process";

import { repoRoot } from "../scripts/lib/paths.js";

const result = spawnSync("cargo", ["bench", "-p", "kubernetes", "--bench", "twenty_leases"], {
  cwd: repoRoot,
  stdio: "inherit",
});
process.exit(result.status ?? 1);
