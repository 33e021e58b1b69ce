// The addon builds its tokio runtime on the first hook that needs it (src/runtime.rs), not at
// load: a fresh worker that loads the addon, constructs both providers and answers the
// synchronous hooks (health, config validation) has started no thread; its first asynchronous
// call starts the runtime's. Threads are listed in /proc/self/task of a fresh node process (the
// test's own process may have loaded the addon already), by id: a new thread takes its name only
// once it runs, so a name is not there yet right after the runtime is built, but its id is.

import { execFile } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { describe, expect, it } from "vitest";

import { repoRoot } from "./support/paths.js";

const SCRIPT = `
import { readdirSync } from "node:fs";
const kit = await import(${JSON.stringify(pathToFileURL(path.join(repoRoot, "plugin-kit/index.js")).href)});
const before = new Set(readdirSync("/proc/self/task"));
const runtimeThreads = () => readdirSync("/proc/self/task").filter((task) => !before.has(task)).length;
const native = await kit.loadNative();
const afterLoad = runtimeThreads();
const answers = [];
for (const provider of [native.NativeProvider.createos(), native.NativeProvider.kubernetes()]) {
  provider.setup();
  const callHook = provider.hookCaller();
  answers.push(typeof callHook("onHealth")?.then);
  answers.push(typeof callHook("onEnvironmentValidateConfig", { config: {} })?.then);
}
const afterSyncHooks = runtimeThreads();
await native.debugPanicAsync("first asynchronous call");
const afterAsyncCall = runtimeThreads();
console.log(JSON.stringify({ afterLoad, answers, afterSyncHooks, afterAsyncCall }));
`;

function runFreshNode() {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--input-type=module", "-e", SCRIPT],
      { cwd: repoRoot, encoding: "utf8", env: { PATH: process.env.PATH } },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout))),
    );
  });
}

describe("the addon's tokio runtime", () => {
  it("is not started by the load, the constructors or the synchronous hooks, and is by the first asynchronous call", async () => {
    const seen = await runFreshNode();
    // The synchronous hooks answered on the JS thread (an outcome, not a promise).
    expect(seen.answers).toEqual(["undefined", "undefined", "undefined", "undefined"]);
    expect(seen.afterLoad).toBe(0);
    expect(seen.afterSyncHooks).toBe(0);
    expect(seen.afterAsyncCall).toBeGreaterThan(0);
  });
});
