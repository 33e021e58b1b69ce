// Starts the local API emulators (crates/emulator binaries) as child processes. Each binary
// prints one JSON line describing where it serves, then runs until its stdin closes, so a test
// file that forgets to stop one still cannot leak it past its own exit.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";

import { packageRoot } from "./paths.js";

/** The emulator binary: `$PAPERCLIP_EMULATOR_DIR/<name>`, else the release build, else debug. */
export function emulatorBinary(name) {
  const candidates = [
    process.env.PAPERCLIP_EMULATOR_DIR && path.join(process.env.PAPERCLIP_EMULATOR_DIR, name),
    path.join(packageRoot, "target/release", name),
    path.join(packageRoot, "target/debug", name),
  ].filter(Boolean);
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) {
    throw new Error(
      `${name} is not built; run \`cargo build --release -p emulator --bins\` in a checkout of the repository (npm install does this), or set PAPERCLIP_EMULATOR_DIR to the folder holding it: the npm package does not ship the emulators.`,
    );
  }
  return found;
}

/**
 * Spawns `name` with `args` and resolves once it has printed its descriptor line. The returned
 * handle's `stop()` closes stdin and waits for a clean exit.
 */
export async function startEmulator(name, args = []) {
  const child = spawn(emulatorBinary(name), args, { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const lines = createInterface({ input: child.stdout });
  const descriptor = await new Promise((resolve, reject) => {
    lines.once("line", (line) => {
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new Error(`${name} printed an unexpected first line: ${line}`));
      }
    });
    exited.then(({ code, signal }) => reject(new Error(`${name} exited (${code ?? signal}) before serving: ${stderr.trim()}`)));
  });
  return {
    ...descriptor,
    child,
    get stderr() {
      return stderr;
    },
    async stop() {
      child.stdin.end();
      return exited;
    },
  };
}
