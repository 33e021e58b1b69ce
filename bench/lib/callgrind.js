// Instruction counts from `valgrind --tool=callgrind`: repeatable where wall time on a shared
// 2-core VM is not. Collection is limited to what runs inside the functions named by `toggle`
// (callgrind's --toggle-collect), so the count covers exactly one window of the process.

import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** Whether valgrind is installed (the bench reports the figure as not measured otherwise). */
export function haveValgrind() {
  try {
    execFileSync("valgrind", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `command args` under callgrind, collecting only inside `toggle` (a function-name
 * pattern), and resolves with { instructions, stdout }. `keep` (a path) keeps the profile for
 * callgrind_annotate; otherwise it is written to a temp dir and removed.
 */
export function callgrind(command, args, { toggle, keep = null, env = process.env } = {}) {
  const dir = keep ? null : mkdtempSync(path.join(tmpdir(), "paperclip-bench-callgrind-"));
  const out = keep ?? path.join(dir, "callgrind.out");
  const vgArgs = ["--tool=callgrind", `--callgrind-out-file=${out}`, ...(toggle ? ["--collect-atstart=no", `--toggle-collect=${toggle}`] : []), command, ...args];
  return new Promise((resolve, reject) => {
    execFile("valgrind", vgArgs, { env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (error) return reject(new Error(`callgrind ${path.basename(command)} ${args.join(" ")} failed: ${String(stderr).trim().split("\n").slice(-3).join(" | ")}`));
      const collected = /Collected\s*:\s*(\d+)/.exec(stderr);
      if (!collected) return reject(new Error("callgrind printed no instruction count"));
      resolve({ instructions: Number(collected[1]), stdout });
    });
  });
}
