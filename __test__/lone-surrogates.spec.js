// Lone UTF-16 surrogates in params: a JavaScript string may hold one (a
// prompt cut inside an emoji), the host's JSON-RPC line carries it as a `\udXXX` escape, and
// the worker must carry it through every hook instead of failing the call with an internal
// error. Where the string reaches the wire as UTF-8 it becomes U+FFFD, as Node writes it.
// Through real forked workers, against the emulators.

import { readFile } from "node:fs/promises";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { ForkedWorker } from "../lib/forked-worker.js";

const LONE_HIGH = "\ud83d"; // the first half of 😀
const LONE_LOW = "\ude00"; // the second half
const CUT = `cut ${LONE_HIGH} here ${LONE_LOW} and 😀 whole`;
const INTERNAL = "internal error";

/** Every params field a user or an agent writes, each holding lone surrogates. */
function hostile(extra = {}) {
  return {
    issueId: `issue ${LONE_HIGH}`,
    runId: `run ${LONE_LOW}`,
    prompt: CUT,
    executionWorkspaceSettings: { note: CUT, [`key ${LONE_HIGH}`]: [LONE_LOW] },
    stdin: CUT,
    env: { CUT },
    args: [CUT],
    ...extra,
  };
}

/** Calls `method` and returns its error message, or null when it resolved. */
async function messageOf(worker, method, params, id) {
  try {
    await worker.call(method, params, { invocation: { id, scope: { companyId: "company-1" } } });
    return null;
  } catch (error) {
    return String(error?.message ?? error);
  }
}

/** Every method the worker advertised, with params full of lone surrogates: none fails inside. */
async function sweep(worker, base) {
  const methods = worker.initializeResult.supportedMethods.filter((m) => !["initialize", "shutdown"].includes(m));
  expect(methods.length).toBeGreaterThan(5);
  for (const method of methods) {
    const message = await messageOf(worker, method, { ...base, ...hostile() }, `inv-${method}`);
    expect(message ?? "", method).not.toContain(INTERNAL);
    expect(message ?? "", method).not.toContain("not JSON");
  }
}

describe("CreateOS: lone surrogates in params", () => {
  const KEY = "canary-key-surrogates-5e1b";
  let emulator;
  let worker;

  beforeAll(async () => {
    emulator = await startEmulator("createos-emulator", ["--api-key", KEY, "--transition-ms", "0"]);
    worker = await ForkedWorker.start("createos");
  });

  afterAll(async () => {
    worker?.kill();
    await emulator?.stop();
  });

  it("acquires, executes with them in stdin, env and args (sent as U+FFFD) and destroys", { timeout: 60_000 }, async () => {
    const config = { apiUrl: emulator.url, apiKey: KEY, shape: "s-1vcpu-1gb" };
    const base = { driverKey: "createos", companyId: "company-1", environmentId: "env-1", config };
    const call = (method, params, id) =>
      worker.call(method, params, { invocation: { id, scope: { companyId: "company-1" } } });
    const lease = await call("environmentAcquireLease", { ...base, ...hostile() }, "inv-acquire");
    const result = await call(
      "environmentExecute",
      {
        ...base,
        lease,
        command: "bash",
        args: ["-c", 'cat; printf "|%s|%s" "$CUT" "$1"', "arg0", CUT],
        env: { CUT },
        stdin: CUT,
        cwd: "/paperclip-workspace",
      },
      "inv-exec",
    );
    const sent = CUT.toWellFormed();
    expect(sent).toContain("\ufffd");
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`${sent}|${sent}|${sent}`);
    await call("environmentDestroyLease", { ...base, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, "inv-destroy");
    expect((await (await fetch(`${emulator.controlUrl}/counts`)).json()).sandboxes).toBe(0);
  });

  it("no hook fails with an internal error", { timeout: 120_000 }, async () => {
    const config = { apiUrl: emulator.url, apiKey: KEY, shape: `s-1vcpu-1gb${LONE_HIGH}` };
    await sweep(worker, { driverKey: "createos", companyId: `company-1${LONE_LOW}`, environmentId: "env-1", config });
  });
});

describe("Kubernetes: lone surrogates in params", () => {
  let emulator;
  let worker;
  let kubeconfig;

  beforeAll(async () => {
    emulator = await startEmulator("kubernetes-emulator", ["--fast"]);
    kubeconfig = await readFile(emulator.kubeconfig, "utf8");
    worker = await ForkedWorker.start("kubernetes");
  });

  afterAll(async () => {
    worker?.kill();
    await emulator?.stop();
  });

  it("no hook fails with an internal error", { timeout: 120_000 }, async () => {
    const config = { kubeconfig, companySlug: "acme", namespacePrefix: `p${LONE_HIGH}-` };
    await sweep(worker, { driverKey: "kubernetes", companyId: "company-1", environmentId: `env${LONE_LOW}`, config });
  });
});
