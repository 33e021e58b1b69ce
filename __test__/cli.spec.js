// `paperclip-sandbox check`: the lifecycle through the real forked worker, against the embedded
// emulators (--emulator) and against emulators this test starts itself (a config FILE naming
// them, as an operator's config names a real account or cluster), with its exit codes, secret
// masking and Ctrl-C cleanup. Runs the CLI as a child process on this Node (process.execPath);
// synchronises on its progress output, never on sleeps.

import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { EMULATOR_ARGS } from "../lib/lifecycle.js";
import { repoRoot } from "../scripts/lib/paths.js";
import { pollUntil } from "./support/poll.js";

const CLI = path.join(repoRoot, "bin/paperclip-sandbox.js");
const CANARY_KEY = "canary-cli-key-5b2e90aa-never-print-me";
const CANARY_TOKEN = "canary-cli-token-77c1d3e4-never-print-me";

/**
 * Runs the CLI; `onLine(line, child)` sees each stdout line as it arrives. Resolves with the exit
 * code, signal and both outputs.
 */
function runCli(args, { onLine } = {}) {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let partial = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    partial += chunk;
    const lines = partial.split("\n");
    partial = lines.pop();
    for (const line of lines) onLine?.(line, child);
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
}

let dir;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "cli-spec-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function configFile(name, content) {
  const file = path.join(dir, name);
  await writeFile(file, typeof content === "string" ? content : JSON.stringify(content));
  return file;
}

/** A TCP port on 127.0.0.1 that nothing listens on. */
async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const LIFECYCLE_STEPS = [
  "✓ fork plugins/PLUGIN/dist/worker.js and initialize",
  "✓ validate config",
  "✓ probe",
  "✓ TAGacquire lease",
  "✓ TAGrealize workspace",
  "✓ TAGsync in a small workspace",
  "✓ TAGexecute (output streams live)",
  "✓ TAGsync out and verify",
  "✓ TAGrelease lease",
  "✓ shutdown",
];

function expectStepsInOrder(output, plugin, tag) {
  let at = -1;
  for (const step of LIFECYCLE_STEPS.map((s) => s.replace("PLUGIN", plugin).replace("TAG", tag))) {
    const found = output.indexOf(step, at + 1);
    expect(found, `${step} after position ${at} in:\n${output}`).toBeGreaterThan(at);
    at = found;
  }
}

describe("paperclip-sandbox check --emulator", () => {
  it("runs the CreateOS lifecycle on the embedded emulator and exits 0", async () => {
    const { code, stdout, stderr } = await runCli(["check", "--provider", "createos", "--emulator"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expectStepsInOrder(stdout, "createos", "");
    expect(stdout).toContain("[stdout] step 3");
    expect(stdout).toMatch(/✓ sync out and verify \(\d+ ms\)  1 file, 33 bytes; content verified/);
    expect(stdout).toContain("result    PASSED (exit 0)");
    expect(stdout).toMatch(/"apiKey":"\*\*\*\* \(\d+ chars\)"/);
  }, 60_000);

  it("runs the Kubernetes sandbox-cr lifecycle on the embedded emulator and exits 0", async () => {
    const { code, stdout } = await runCli(["check", "--provider", "kubernetes", "--emulator"]);
    expect(code).toBe(0);
    expectStepsInOrder(stdout, "kubernetes", "[sandbox-cr] ");
    expect(stdout).toContain("[stdout] wrote output.txt");
    expect(stdout).not.toMatch(/apiVersion|BEGIN CERTIFICATE|token:/);
    expect(stdout).toContain("result    PASSED (exit 0)");
    // The probe's checks, one per line under its step.
    expect(stdout).toMatch(
      new RegExp(
        [
          "✓ probe \\(\\d+ ms\\)  Kubernetes cluster reachable\\. Tenant namespace: paperclip-paperclip-check\\.",
          " {6}Sandbox API agents\\.x-k8s\\.io: served in v1alpha1; leases use v1alpha1\\.",
          " {6}Permissions: all \\d+ the config needs are granted\\.",
          " {6}Tenant namespace paperclip-paperclip-check: (exists|does not exist yet; the first lease creates it)\\.",
          ' {6}Runtime image for adapter "claude_local": \\S+ is a valid reference\\.',
        ].join("\n"),
      ),
    );
  }, 60_000);

  it("--deep runs the adapter's probe command in one more lease, each step timed", async () => {
    // The emulator runs commands on this machine, which has no `claude`: the adapter's probe
    // command comes from the config's adapter entry, as an operator's image would answer it.
    const file = await configFile("deep.json", {
      adapters: [{ adapterType: "claude_local", runtimeImage: "ghcr.io/acme/agent:1", probeCommand: ["sh", "-c", "echo probe-ok"] }],
    });
    const { code, stdout } = await runCli(["check", "--provider", "kubernetes", "--emulator", "--config", file, "--deep"]);
    expect(code, stdout).toBe(0);
    const deep = [
      /✓ \[sandbox-cr\] deep: acquire lease for claude_local \(ghcr\.io\/acme\/agent:1\) \(\d+ ms\)  paperclip-paperclip-check\/pc-/,
      /✓ \[sandbox-cr\] deep: execute sh -c echo probe-ok \(\d+ ms\)  exit 0: probe-ok/,
      /✓ \[sandbox-cr\] deep: release lease \(\d+ ms\)/,
      /✓ \[sandbox-cr\] acquire lease \(\d+ ms\)/,
    ];
    let at = stdout.indexOf("✓ probe");
    for (const step of deep) {
      const found = stdout.slice(at).search(step);
      expect(found, `${step} after the probe, in order:\n${stdout}`).toBeGreaterThan(0);
      at += found;
    }
    expect(stdout).toContain("result    PASSED (exit 0)");
  }, 60_000);

  it("a probe that fails a check prints every line and is explained", async () => {
    const file = await configFile("bad-image.json", { adapters: [{ adapterType: "claude_local", runtimeImage: "ghcr.io/Acme/agent:1" }] });
    const { code, stdout } = await runCli(["check", "--provider", "kubernetes", "--emulator", "--config", file]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/✗ probe \(\d+ ms\): Kubernetes cluster reachable, but 1 of \d+ checks failed\. Tenant namespace: paperclip-paperclip-check\./);
    expect(stdout).toMatch(/\n {6}Permissions: all \d+ the config needs are granted\.\n/);
    expect(stdout).toContain('      Kubernetes runtime image for adapter "claude_local" is not a valid image reference: "ghcr.io/Acme/agent:1"');
    expect(stdout).not.toContain("acquire lease");
    expect(stdout).toContain('result    FAILED at "probe" (exit 1)');
    expect(stdout).toContain("code      K8S_PROBE_CHECKS_FAILED");
  }, 60_000);

  it("runs the job backend with --json: progress on stderr, a JSON report on stdout", async () => {
    const { code, stdout, stderr } = await runCli(["check", "--provider", "kubernetes", "--emulator", "--backend", "job", "--json"]);
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({ ok: true, exitCode: 0, interrupted: false, provider: "kubernetes", backend: "job", emulator: true, failure: null });
    expect(report.steps.map((s) => s.label)).toEqual([
      "start the embedded Kubernetes API emulator",
      "fork plugins/kubernetes/dist/worker.js and initialize",
      "validate config",
      "probe",
      "[job] acquire lease",
      "[job] execute (output streams live)",
      "[job] release lease",
      "shutdown",
    ]);
    expect(report.steps.every((s) => s.ok && Number.isInteger(s.ms))).toBe(true);
    expect(report.config.kubeconfig).toMatch(/^\*\*\*\* \(\d+ chars\)$/);
    expect(stderr).toContain("[stdout] job pod ran its command");
  }, 60_000);
});

describe("paperclip-sandbox check: usage and config errors exit 2", () => {
  it("a config FILE that is not JSON", async () => {
    const file = await configFile("broken.json", `{"apiUrl": "http://x", "apiKey": "${CANARY_KEY}",`);
    const { code, stdout, stderr } = await runCli(["check", "--provider", "createos", "--config", file]);
    expect(code).toBe(2);
    expect(stderr).toContain(`config file ${file} is not valid JSON`);
    expect(stdout + stderr).not.toContain(CANARY_KEY);
  });

  it("a config FILE that does not exist, or holds no object", async () => {
    const missing = await runCli(["check", "--provider", "kubernetes", "--config", path.join(dir, "nope.json")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("cannot read config file");
    expect(missing.stderr).toContain("no such file");
    const array = await runCli(["check", "--provider", "kubernetes", "--config", await configFile("array.json", "[1]")]);
    expect(array.code).toBe(2);
    expect(array.stderr).toContain("must hold a JSON object");
  });

  it("a config the provider's validation rejects (no secret echoed)", async () => {
    const file = await configFile("bad-shape.json", { apiUrl: "not a url", apiKey: CANARY_KEY, shape: "s-1vcpu-1gb" });
    const { code, stdout, stderr } = await runCli(["check", "--provider", "createos", "--config", file]);
    expect(code).toBe(2);
    expect(stdout).toContain("✗ validate config");
    expect(stdout).toContain("the provider rejected the config: CreateOS API URL is invalid.");
    expect(stdout).toContain("code      CREATEOS_API_URL_INVALID");
    expect(stdout).toContain('result    FAILED at "validate config" (exit 2)');
    expect(stdout).not.toContain("✓ probe");
    expect(stdout + stderr).not.toContain(CANARY_KEY);
  });

  it("missing or wrong arguments", async () => {
    for (const args of [
      ["check"],
      ["check", "--provider", "gcp", "--emulator"],
      ["check", "--provider", "createos"],
      ["check", "--provider", "createos", "--emulator", "--backend", "job"],
      ["check", "--provider", "kubernetes", "--emulator", "--backend", "vm"],
      ["check", "--provider", "kubernetes", "--emulator", "--frobnicate"],
      ["check", "--provider", "createos", "--emulator", "--deep"],
    ]) {
      const { code, stderr } = await runCli(args);
      expect(code, args.join(" ")).toBe(2);
      expect(stderr).toContain("Usage: paperclip-sandbox check");
    }
  });
});

describe("paperclip-sandbox check: a failing step exits 1", () => {
  it("an unreachable CreateOS apiUrl fails the probe, explained, with nothing after it", async () => {
    const file = await configFile("unreachable.json", { apiUrl: `http://127.0.0.1:${await closedPort()}`, apiKey: CANARY_KEY, shape: "s-1vcpu-1gb" });
    const { code, stdout, stderr } = await runCli(["check", "--provider", "createos", "--config", file]);
    expect(code).toBe(1);
    expect(stdout).toContain("✓ validate config");
    expect(stdout).toMatch(/✗ probe \(\d+ ms\): CreateOS connection failed\./);
    expect(stdout).not.toContain("acquire lease");
    expect(stdout).toContain("✓ shutdown");
    expect(stdout).toContain('result    FAILED at "probe" (exit 1)');
    expect(stdout).toContain("code      CREATEOS_CONNECTION_FAILED");
    expect(stdout + stderr).not.toContain(CANARY_KEY);
  });
});

describe("paperclip-sandbox check: Ctrl-C cleans up and exits 130", () => {
  it("CreateOS: SIGINT while the command runs destroys the sandbox", async () => {
    const emulator = await startEmulator("createos-emulator", ["--api-key", CANARY_KEY, ...EMULATOR_ARGS.createos]);
    try {
      const file = await configFile("createos-live.json", { apiUrl: emulator.url, apiKey: CANARY_KEY, shape: "s-1vcpu-1gb" });
      let sent = false;
      const run = await runCli(["check", "--provider", "createos", "--config", file], {
        onLine: (line, child) => {
          if (!sent && line.includes("[stdout] step 1")) {
            sent = true;
            child.kill("SIGINT");
          }
        },
      });
      expect(sent).toBe(true);
      expect(run.code).toBe(130);
      expect(run.stdout).toContain("Interrupted: cleaning up");
      expect(run.stdout).toMatch(/✓ cleanup: destroy lease sb_\S+/);
      expect(run.stdout).toContain("✓ shutdown");
      expect(run.stdout).toContain("result    INTERRUPTED");
      expect(run.stdout).not.toContain("✓ sync out and verify");
      expect(run.stdout + run.stderr).not.toContain(CANARY_KEY);
      expect(await (await fetch(`${emulator.controlUrl}/counts`)).json()).toMatchObject({ sandboxes: 0, liveProcesses: 0 });
    } finally {
      await emulator.stop();
    }
  }, 60_000);

  it("Kubernetes: SIGINT while the command runs deletes the lease's objects", async () => {
    const emulator = await startEmulator("kubernetes-emulator", ["--token", CANARY_TOKEN, ...EMULATOR_ARGS.kubernetes]);
    try {
      const kubeconfig = await readFile(emulator.kubeconfig, "utf8");
      const file = await configFile("kubernetes-live.json", { kubeconfig, companySlug: "clitest" });
      let sent = false;
      const run = await runCli(["check", "--provider", "kubernetes", "--config", file], {
        onLine: (line, child) => {
          if (!sent && line.includes("[stdout] step 1")) {
            sent = true;
            child.kill("SIGINT");
          }
        },
      });
      expect(sent).toBe(true);
      expect(run.code).toBe(130);
      expect(run.stdout).toMatch(/✓ cleanup: destroy lease pc-\S+/);
      expect(run.stdout).toContain("result    INTERRUPTED");
      expect(run.stdout + run.stderr).not.toContain(CANARY_TOKEN);
      expect(run.stdout + run.stderr).not.toContain("BEGIN CERTIFICATE");
      // Deletion cascades in the background, as in a cluster: poll (bounded) until it settles.
      const leftovers = async () => {
        const counts = await (await fetch(`${emulator.controlUrl}/counts`)).json();
        const tenant = counts.namespaces["paperclip-clitest"] ?? {};
        return { scoped: ["pods", "sandboxes", "jobs", "secrets"].filter((p) => (tenant[p] ?? 0) > 0), liveProcesses: counts.liveProcesses };
      };
      const last = await pollUntil(leftovers, (left) => left.scoped.length === 0 && left.liveProcesses === 0);
      expect(last).toEqual({ scoped: [], liveProcesses: 0 });
    } finally {
      await emulator.stop();
    }
  }, 60_000);
});
