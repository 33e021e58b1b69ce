#!/usr/bin/env node
// `npm run bench`: the performance figures for the native CreateOS and Kubernetes
// plugin workers, side by side with two floor workers (bench/floors: a bare JSON-RPC worker and
// an SDK-only worker), each worker forked exactly as the Paperclip host forks it. Writes
// bench/results/latest.{json,md} and prints the Markdown report.
//
//   node bench/run.js                     full run (>= 10 runs per figure where it fits the budget)
//   node bench/run.js --quick             fewer runs, smaller streams and trees (a smoke test, not numbers)
//   node bench/run.js --only sync,stall   rerun these figure groups only; the other groups' figures
//                                         are kept from the previous latest.json
//
// Figure groups (bench/figures/*.js, one module each): cold, validate, stream, sync, stall, memory.
// This file only parses options, starts the emulators, runs the groups and writes the report.
// Plain ESM, no test framework: nothing here asserts; targets are reported, not enforced.

import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { startEmulator } from "../lib/emulators.js";
import { coldStartFigures } from "./figures/cold-start.js";
import { memoryFigures } from "./figures/memory.js";
import { stallFigures } from "./figures/stall.js";
import { streamFigures } from "./figures/stream.js";
import { syncFigures } from "./figures/sync.js";
import { validateFigures } from "./figures/validate.js";
import { log, MiB, workerSpecs } from "./lib/common.js";
import { machine } from "./lib/machine.js";
import { markdown } from "./lib/report.js";
import { evaluateTargets } from "./lib/targets.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const GROUPS = {
  cold: coldStartFigures,
  validate: validateFigures,
  stream: streamFigures,
  sync: syncFigures,
  stall: stallFigures,
  memory: memoryFigures,
};

function parseArgs(argv) {
  const quick = argv.includes("--quick");
  let only = null;
  const at = argv.findIndex((a) => a === "--only" || a.startsWith("--only="));
  if (at !== -1) {
    const value = argv[at].includes("=") ? argv[at].slice("--only=".length) : argv[at + 1];
    only = (value ?? "").split(",").map((g) => g.trim()).filter(Boolean);
    const unknown = only.filter((g) => !GROUPS[g]);
    if (only.length === 0 || unknown.length) {
      console.error(`--only takes a comma-separated list of: ${Object.keys(GROUPS).join(", ")}${unknown.length ? ` (unknown: ${unknown.join(", ")})` : ""}`);
      process.exit(2);
    }
  }
  return { quick, only };
}

const { quick: QUICK, only: ONLY } = parseArgs(process.argv.slice(2));
const RUNS = QUICK ? 3 : 10;
const resultsDir = path.join(here, "results");
const jsonPath = path.join(resultsDir, "latest.json");

/** Per-group options, fixed per run mode so that a group rerun alone measures what a full run does. */
const options = {
  quick: QUICK,
  runs: RUNS,
  validateCalls: QUICK ? 500 : 3000,
  streams: [
    { key: "64k", label: "64 MiB stdout in 64 KiB frames", total: (QUICK ? 8 : 64) * MiB, chunk: 64 * 1024 },
    { key: "4k", label: "8 MiB stdout in 4 KiB frames", total: (QUICK ? 2 : 8) * MiB, chunk: 4 * 1024 },
  ],
  /** Per streaming series: stop adding runs past this much wall time (keeps the whole run in budget). */
  streamBudgetMs: QUICK ? 5_000 : 25_000,
  syncTree: QUICK ? { files: 1_000, dirs: 10, bytes: 10 * MiB } : { files: 10_000, dirs: 100, bytes: 100 * MiB },
  memoryCalls: { warmup: 500, measured: QUICK ? 2_000 : 10_000 },
};

// A rerun of some groups keeps the other groups' figures from the previous run (same mode
// only: a --quick group next to full-size ones would be misleading).
let previous = null;
if (ONLY && existsSync(jsonPath)) {
  try {
    const prior = JSON.parse(await readFile(jsonPath, "utf8"));
    if (prior.groups && prior.quick === QUICK) previous = prior;
    else log(`previous ${path.relative(process.cwd(), jsonPath)} is from another mode or an older layout: not merging`);
  } catch {
    log("previous latest.json unreadable: not merging");
  }
}

const results = {
  startedAt: new Date().toISOString(),
  quick: QUICK,
  runs: RUNS,
  machine: machine(),
  only: ONLY,
  groups: {},
  figures: {},
  notes: [],
};
log(`machine: ${JSON.stringify(results.machine)}`);
const machineNotes = [];
if (results.machine.addon?.build.startsWith("debug")) {
  machineNotes.push("the native addon is a DEBUG build: rebuild with `npm run build` before trusting these numbers");
}

const emulators = [];
const cleanups = [];
process.on("SIGINT", () => process.exit(130));
try {
  // The emulator refuses request bodies over 64 MiB by default; the sync figure uploads a
  // ~105 MiB tar in one PUT (the provider's file API takes the archive whole), so lift it.
  const coEmu = await startEmulator("createos-emulator", ["--api-key", "bench-key", "--transition-ms", "20", "--max-body-bytes", String(1024 * MiB)]);
  emulators.push(coEmu);
  const k8sEmu = await startEmulator("kubernetes-emulator", ["--fast", "--token", "bench-token"]);
  emulators.push(k8sEmu);
  const kubeconfig = await readFile(k8sEmu.kubeconfig, "utf8");
  const coConfig = { apiUrl: coEmu.url, apiKey: "bench-key", shape: "s-1vcpu-1gb" };
  const k8sConfig = { kubeconfig, companySlug: "acme", backend: "sandbox-cr", egressMode: "cilium" };
  const env = {
    coEmu,
    k8sEmu,
    k8sEmuPid: k8sEmu.child.pid,
    coConfig,
    k8sConfig,
    coBase: { driverKey: "createos", companyId: "company-1", environmentId: "env-1" },
    k8sBase: { driverKey: "kubernetes", companyId: "company-1", environmentId: "env-1" },
    validateParams: {
      bare: { driverKey: "createos", config: coConfig },
      sdk: { driverKey: "createos", config: coConfig },
      createos: { driverKey: "createos", config: coConfig },
      kubernetes: { driverKey: "kubernetes", config: k8sConfig },
    },
  };
  const specs = await workerSpecs();

  for (const [name, run] of Object.entries(GROUPS)) {
    if (ONLY && !ONLY.includes(name)) continue;
    const ctx = { ...options, specs, env, cleanups, figures: {}, notes: [] };
    const startedAt = new Date().toISOString();
    try {
      await run(ctx);
    } catch (error) {
      // One broken group must not cost the others' figures; the report says what failed.
      log(`group ${name} FAILED: ${error.stack ?? error}`);
      ctx.notes.push(`group \`${name}\` FAILED and its figures are incomplete: ${String(error.message ?? error).slice(0, 500)}`);
      process.exitCode = 1;
    }
    Object.assign(results.figures, ctx.figures);
    results.groups[name] = { startedAt, finishedAt: new Date().toISOString(), figures: Object.keys(ctx.figures), notes: ctx.notes };
  }
} finally {
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch {
      // best effort: the process is ending
    }
  }
  for (const emulator of emulators) await emulator.stop();
}

if (previous) {
  for (const [name, group] of Object.entries(previous.groups)) {
    if (results.groups[name]) continue;
    results.groups[name] = { ...group, keptFromPreviousRun: true };
    for (const key of group.figures) if (previous.figures[key]) results.figures[key] = previous.figures[key];
  }
  // Report groups in the canonical order whichever run they came from.
  results.groups = Object.fromEntries(Object.keys(GROUPS).filter((g) => results.groups[g]).map((g) => [g, results.groups[g]]));
}
results.finishedAt = new Date().toISOString();
results.notes = [...machineNotes, ...Object.values(results.groups).flatMap((g) => g.notes)];
results.targets = evaluateTargets(results.figures);

const md = markdown(results, options);
await mkdir(resultsDir, { recursive: true });
await writeFile(jsonPath, `${JSON.stringify(results, null, 2)}\n`);
await writeFile(path.join(resultsDir, "latest.md"), md);
process.stdout.write(md);
