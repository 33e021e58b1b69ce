// The ctx bridge: output produced by a Rust task must reach `ctx.execution.log` stamped with the
// host's invocation id. Node 24 drops the async context for callbacks that arrive from a Rust
// thread unless worker.js binds them; this drives a real SDK RPC host in process, with a test
// plugin whose execute hook streams through the same bridge the providers use.

import { PassThrough, Writable } from "node:stream";

import { definePlugin, startWorkerRpcHost } from "@paperclipai/plugin-sdk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import * as native from "../index.js";
import { createHostBridge, invoke } from "../plugin-kit/index.js";
import { JsonRpcPeer, initializeParams } from "../lib/json-rpc.js";

const manifest = {
  id: "paperclip.bridge-test",
  apiVersion: 1,
  version: "0.0.0",
  displayName: "Bridge test",
  description: "Streams chunks from Rust",
  author: "tests",
  categories: ["automation"],
  capabilities: ["environment.drivers.register"],
  entrypoints: { worker: "./worker.js" },
};

function streamingPlugin() {
  const host = createHostBridge();
  return definePlugin({
    async setup(ctx) {
      host.attach(ctx);
    },
    async onEnvironmentExecute(params) {
      const chunks = params.args;
      const sent = await native.debugStreamExecutionLog(chunks, host.executionLog());
      return { exitCode: 0, signal: null, timedOut: false, stdout: String(sent), stderr: "" };
    },
  });
}

function executeParams(companyId, chunks) {
  return {
    driverKey: "bridge",
    companyId,
    environmentId: "env-1",
    config: {},
    lease: { providerLeaseId: "lease-1" },
    command: "stream",
    args: chunks,
  };
}

describe("execution log bridge (in-process JSON-RPC)", () => {
  let hostToWorker;
  let workerToHost;
  let rpcHost;
  let peer;

  beforeEach(async () => {
    hostToWorker = new PassThrough();
    workerToHost = new PassThrough();
    rpcHost = startWorkerRpcHost({ plugin: streamingPlugin(), stdin: hostToWorker, stdout: workerToHost });
    peer = new JsonRpcPeer(workerToHost, hostToWorker);
    await peer.call("initialize", initializeParams(manifest));
  });

  afterEach(() => rpcHost.stop());

  it("stamps every chunk streamed from a Rust task with the invocation id", async () => {
    const chunks = Array.from({ length: 40 }, (_, i) => `chunk-${i}\n`);
    const invocation = { id: "inv-123", scope: { companyId: "company-1" } };
    const result = await peer.call("environmentExecute", executeParams("company-1", chunks), { invocation });
    expect(result.stdout).toBe("40");

    const logs = peer.notifications.filter((n) => n.method === "execute.log");
    expect(logs.map((n) => n.params.chunk)).toEqual(chunks);
    expect(logs.map((n) => n.params.stream)).toEqual(chunks.map((_, i) => (i % 2 === 0 ? "stdout" : "stderr")));
    for (const log of logs) expect(log.paperclipInvocationId).toBe("inv-123");
  });

  it("keeps concurrent calls apart: each chunk carries its own call's id", async () => {
    const calls = ["a", "b", "c"].map((tag) => {
      const chunks = Array.from({ length: 25 }, (_, i) => `${tag}${i}`);
      const invocation = { id: `inv-${tag}`, scope: { companyId: `company-${tag}` } };
      return peer.call("environmentExecute", executeParams(`company-${tag}`, chunks), { invocation });
    });
    await Promise.all(calls);

    const logs = peer.notifications.filter((n) => n.method === "execute.log");
    expect(logs).toHaveLength(75);
    for (const log of logs) {
      expect(log.paperclipInvocationId).toBe(`inv-${log.params.chunk[0]}`);
    }
  });
});

describe("execution log backpressure", () => {
  // A host that reads one chunk per event-loop turn: much slower than Rust can produce.
  function slowOutput() {
    return new Writable({
      highWaterMark: 64 * 1024,
      write(_chunk, _encoding, callback) {
        setImmediate(callback);
      },
    });
  }

  it("holds a fast producer at the budget while the output drains, and loses nothing", async () => {
    const output = slowOutput();
    const host = createHostBridge({ output });
    const received = [];
    let maxBuffered = 0;
    host.attach({
      execution: {
        log(stream, chunk) {
          received.push(chunk);
          output.write(chunk);
          maxBuffered = Math.max(maxBuffered, output.writableLength);
        },
      },
    });
    const chunk = (i) => String(i % 10).repeat(64 * 1024);
    const chunks = Array.from({ length: 256 }, (_, i) => chunk(i)); // 16 MiB
    await expect(native.debugStreamExecutionLog(chunks, host.executionLog())).resolves.toBe(256);
    expect(received).toEqual(chunks);
    // 1 MiB of budget (src/execution_log.rs) plus the output's own high-water mark.
    expect(maxBuffered).toBeLessThanOrEqual(1024 * 1024 + 64 * 1024);
  });

  it("delivers every chunk before the call resolves, one ctx call per chunk", async () => {
    const output = slowOutput();
    const host = createHostBridge({ output });
    const received = [];
    host.attach({ execution: { log: (stream, chunk) => received.push([stream, chunk]) && output.write(chunk) } });
    const chunks = Array.from({ length: 2000 }, (_, i) => `line ${i}\n`);
    await native.debugStreamExecutionLog(chunks, host.executionLog());
    expect(received).toEqual(chunks.map((c, i) => [i % 2 === 0 ? "stdout" : "stderr", c]));
  });
});

describe("native failures", () => {
  it("turns a panic in an async call into a rejected promise with a clear message", async () => {
    const failure = invoke(() => native.debugPanicAsync("boom in a task"));
    await expect(failure).rejects.toThrow(new Error("paperclip-sandbox-native internal error: boom in a task"));
    // The addon is still usable afterwards.
    await expect(native.debugStreamExecutionLog(["x"], () => {})).resolves.toBe(1);
  });

  it("turns a panic in a sync call into a thrown Error, never an abort", async () => {
    const failure = invoke(() => native.debugPanicSync("boom on the JS thread"));
    await expect(failure).rejects.toThrow(new Error("paperclip-sandbox-native internal error: boom on the JS thread"));
  });

  it("survives a ctx callback that throws", async () => {
    const host = createHostBridge();
    host.attach({
      execution: {
        log() {
          throw new Error("a broken ctx");
        },
      },
    });
    await expect(native.debugStreamExecutionLog(["a", "b", "c"], host.executionLog())).resolves.toBe(3);
  });

  it("answers the synchronous hooks at once, every other hook with a promise", async () => {
    const provider = native.NativeProvider.createos();
    const health = provider.call("onHealth", {});
    expect(typeof health).toBe("string");
    expect(JSON.parse(health).value.status).toBe("ok");
    const invalid = provider.call("onEnvironmentValidateConfig", { driverKey: "createos", config: null });
    expect(typeof invalid).toBe("string");
    expect(JSON.parse(invalid).value.ok).toBe(false);
    const probe = provider.call("onEnvironmentProbe", { driverKey: "createos", config: null });
    expect(probe).toBeInstanceOf(Promise);
    await expect(invoke(() => probe)).resolves.toMatchObject({ ok: false });
  });

  it("rejects with a plain Error carrying the exact message, name and numeric code", async () => {
    const failure = invoke(() => ({ error: { message: "Job created without a UID", name: "Error" } }));
    await expect(failure).rejects.toEqual(new Error("Job created without a UID"));

    const zod = await invoke(() => ({ error: { message: "[]", name: "ZodError" } })).catch((e) => e);
    expect(zod.name).toBe("ZodError");
    expect(zod.message).toBe("[]");

    const http = await invoke(() => ({ error: { message: "HTTP-Code: 403", name: "Error", code: 403 } })).catch((e) => e);
    expect(http.code).toBe(403);
  });
});
