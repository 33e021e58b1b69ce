// What every figure module shares: the run's options, the four workers, invocation ids, the
// `series()` budget helper and a few small utilities. Figure modules receive a `ctx` (see
// bench/run.js) and write into ctx.figures / ctx.notes; nothing here keeps per-run state
// except the invocation counter.

import { rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { BenchWorker, initializeParams, pluginEntry } from "./host.js";

const benchDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export const MiB = 1024 * 1024;
export const now = () => performance.now();
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const log = (...args) => console.error("[bench]", ...args);

/** The four workers, each forked as the host forks it. */
export async function workerSpecs() {
  const createos = await pluginEntry("createos");
  const kubernetes = await pluginEntry("kubernetes");
  return {
    bare: { label: "bare protocol worker (no SDK)", entrypoint: path.join(benchDir, "floors/bare-worker.js"), manifest: createos.manifest },
    sdk: { label: "SDK-only worker", entrypoint: path.join(benchDir, "floors/sdk-worker.js"), manifest: createos.manifest },
    createos: { label: "native CreateOS", ...createos },
    kubernetes: { label: "native Kubernetes", ...kubernetes },
  };
}

/** Forks and initializes a worker; `options` ({env, execArgv}) come from bench/lib/probe.js. */
export async function startWorker(spec, options = {}) {
  const worker = BenchWorker.fork(spec.entrypoint, options.env ?? {}, { execArgv: options.execArgv ?? [] });
  try {
    await worker.call("initialize", initializeParams(spec.manifest));
  } catch (error) {
    worker.kill();
    throw error;
  }
  return worker;
}

let invocationSeq = 0;
/** A fresh `paperclipInvocation` (the host stamps one on every hook call that has a scope). */
export const nextInvocation = () => ({ id: `bench-inv-${++invocationSeq}`, scope: { companyId: "company-1" } });

/**
 * Repeats `once()` (which returns one sample object) up to `runs` times, fewer (>= minRuns)
 * when the series would overrun `budgetMs`. Returns the samples; notes a shortened series.
 */
export async function series(ctx, name, once, { runs = ctx.runs, minRuns = 3, budgetMs = ctx.streamBudgetMs } = {}) {
  const samples = [];
  const t0 = now();
  while (samples.length < runs) {
    samples.push(await once());
    const spent = now() - t0;
    const perRun = spent / samples.length;
    if (samples.length >= minRuns && spent + perRun > budgetMs) break;
  }
  if (samples.length < runs) ctx.notes.push(`${name}: ${samples.length} runs (not ${runs}) to fit the time budget`);
  return samples;
}

/** Runs `tasks` (functions returning promises) at most `limit` at a time; resolves with results in order. */
export async function pool(tasks, limit) {
  const results = new Array(tasks.length);
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
  return results;
}

/**
 * Removes `dir` when the process exits, however it exits (run.js turns Ctrl-C into
 * process.exit, which skips finally blocks), unless `forget()` is called first after a normal
 * removal. The 'exit' event allows only synchronous work, hence rmSync.
 */
export function removeOnExit(dir) {
  const remove = () => rmSync(dir, { recursive: true, force: true });
  process.once("exit", remove);
  return { forget: () => process.off("exit", remove) };
}
