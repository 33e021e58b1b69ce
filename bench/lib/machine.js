// The machine line of a report: cores, memory, CPU, Node, kernel, load, and which addon the
// workers load (a debug build is flagged: its numbers mean nothing).

import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { repoRoot } from "../../scripts/lib/paths.js";
import { MiB } from "./common.js";

function displayPath(file) {
  const relative = path.relative(repoRoot, path.resolve(file));
  return relative.startsWith("..") ? path.resolve(file) : relative;
}

export function machine() {
  const cpus = os.cpus();
  let nproc = cpus.length;
  try {
    nproc = Number(execFileSync("nproc", { encoding: "utf8" }).trim());
  } catch {
    // os.cpus() it is
  }
  const addonPath = process.env.NAPI_RS_NATIVE_LIBRARY_PATH || path.join(repoRoot, "paperclip-sandbox-native.linux-x64-gnu.node");
  const addon = existsSync(addonPath) ? statSync(addonPath) : null;
  return {
    nproc,
    memoryGiB: Number((os.totalmem() / 1024 ** 3).toFixed(1)),
    cpuModel: cpus[0]?.model ?? "unknown",
    node: process.version,
    kernel: os.release(),
    loadavg: os.loadavg().map((l) => Number(l.toFixed(2))),
    // Repo-relative when the override lives in the repo, absolute when it does not.
    addonOverride: process.env.NAPI_RS_NATIVE_LIBRARY_PATH ? displayPath(process.env.NAPI_RS_NATIVE_LIBRARY_PATH) : null,
    addon: addon
      ? {
          path: displayPath(addonPath),
          bytes: addon.size,
          mtime: addon.mtime.toISOString(),
          // A release build is stripped and a few MB; a debug build is hundreds.
          build: addon.size > 60 * MiB ? "debug (numbers NOT representative)" : "release",
        }
      : null,
  };
}
