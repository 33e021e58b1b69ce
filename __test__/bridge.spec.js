// The ctx bridge: output produced by a Rust task must reach `ctx.execution.log` stamped with the
// host's invocation id. Node 24 drops the async context for callbacks that arrive from a Rust
// thread unless worker.js binds them; this drives a real SDK RPC host in process, with a test
// plugin whose execute hook streams through the same bridge the providers use.

import { EventEmitter } from "node:events";
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

  it("delivers every chunk before the call resolves; alternating streams stay one ctx call per chunk", async () => {
    const output = slowOutput();
    const host = createHostBridge({ output });
    const received = [];
    host.attach({ execution: { log: (stream, chunk) => received.push([stream, chunk]) && output.write(chunk) } });
    const chunks = Array.from({ length: 2000 }, (_, i) => `line ${i}\n`);
    await native.debugStreamExecutionLog(chunks, host.executionLog());
    expect(received).toEqual(chunks.map((c, i) => [i % 2 === 0 ? "stdout" : "stderr", c]));
  });
});

describe("execution log batching", () => {
  const BATCH_BYTES = 64 * 1024; // src/execution_log.rs

  /**
   * An output the test holds: it reports backpressure (so the batch on its way stays on its
   * way) until `release()`, which drains it for good.
   */
  function heldOutput() {
    const output = new EventEmitter();
    output.writableNeedDrain = true;
    output.destroyed = false;
    output.release = () => {
      output.writableNeedDrain = false;
      output.emit("drain");
    };
    return output;
  }

  /** A bridge whose ctx records each `execution.log` call as [stream, chunk]. */
  function recordingBridge(output) {
    const host = createHostBridge({ output });
    const calls = [];
    host.attach({ execution: { log: (stream, chunk) => calls.push([stream, chunk]) } });
    return { host, calls };
  }

  /** Each call is a run of consecutive same-stream chunks, in order, covering them all. */
  function expectRunsOf(calls, chunks, streams) {
    let at = 0;
    for (const [stream, text] of calls) {
      let joined = "";
      const start = at;
      while (joined.length < text.length && at < chunks.length) {
        expect(streams[at], `chunk ${at} joined across streams`).toBe(stream);
        joined += chunks[at];
        at += 1;
      }
      expect(joined, `call made of chunks ${start}..${at - 1}`).toBe(text);
    }
    expect(at).toBe(chunks.length);
  }

  it("joins adjacent chunks of one stream that queued up while JS was busy, within the bound", async () => {
    const output = heldOutput();
    const { host, calls } = recordingBridge(output);
    // 3 runs of stdout / stderr, 1,000 chunks of 100-ish bytes: 100 KiB, under the 1 MiB budget.
    const chunks = Array.from({ length: 1000 }, (_, i) => `line ${String(i).padStart(4, "0")} ${"x".repeat(90)}\n`);
    const streams = chunks.map((_, i) => (i < 400 || i >= 700 ? "stdout" : "stderr"));
    const sent = native.debugStreamExecutionLog(chunks, host.executionLog(), {
      streams,
      // The first chunk is on its way and held there; everything else is queued behind it.
      onHandedOver: () => output.release(),
    });
    await expect(sent).resolves.toBe(1000);
    expect(calls[0]).toEqual(["stdout", chunks[0]]);
    expectRunsOf(calls, chunks, streams);
    for (const [, text] of calls) expect(text.length).toBeLessThanOrEqual(BATCH_BYTES);
    // Queued behind the held first chunk, the rest go in batches of at most 64 KiB, each one
    // ctx call per run of a stream: [1..399 stdout, 400..648 stderr], [649..699 stderr,
    // 700..999 stdout] (101 bytes a chunk).
    expect(calls.map(([stream, text]) => [stream, text.length / 101])).toEqual([
      ["stdout", 1],
      ["stdout", 399],
      ["stderr", 249],
      ["stderr", 51],
      ["stdout", 300],
    ]);
  });

  it("never joins past the bound, and sends a larger chunk alone and whole", async () => {
    const output = heldOutput();
    const { host, calls } = recordingBridge(output);
    const chunks = [
      "first",
      ...Array.from({ length: 6 }, (_, i) => String(i).repeat(20 * 1024)),
      "L".repeat(200 * 1024),
      "tail",
    ];
    const streams = chunks.map(() => "stdout");
    const sent = native.debugStreamExecutionLog(chunks, host.executionLog(), { streams, onHandedOver: () => output.release() });
    await expect(sent).resolves.toBe(chunks.length);
    expectRunsOf(calls, chunks, streams);
    expect(calls.map(([, text]) => text.length)).toEqual([5, 60 * 1024, 60 * 1024, 200 * 1024, 4]);
  });

  it("sends output that arrives slowly chunk by chunk, each with the invocation id", async () => {
    // Through a real SDK RPC host: the producer hands over each chunk only once the one
    // before has been taken, so nothing is ever queued and nothing is joined.
    const hostToWorker = new PassThrough();
    const workerToHost = new PassThrough();
    const host = createHostBridge();
    const plugin = definePlugin({
      async setup(ctx) {
        host.attach(ctx);
      },
      async onEnvironmentExecute(params) {
        const sent = await native.debugStreamExecutionLog(params.args, host.executionLog(), {
          streams: params.args.map(() => "stdout"),
          trickle: true,
        });
        return { exitCode: 0, signal: null, timedOut: false, stdout: String(sent), stderr: "" };
      },
    });
    const rpcHost = startWorkerRpcHost({ plugin, stdin: hostToWorker, stdout: workerToHost });
    try {
      const peer = new JsonRpcPeer(workerToHost, hostToWorker);
      await peer.call("initialize", initializeParams(manifest));
      const chunks = Array.from({ length: 30 }, (_, i) => `tick ${i}\n`);
      const invocation = { id: "inv-trickle", scope: { companyId: "company-1" } };
      await peer.call("environmentExecute", executeParams("company-1", chunks), { invocation });
      const logs = peer.notifications.filter((n) => n.method === "execute.log");
      expect(logs.map((n) => n.params.chunk)).toEqual(chunks);
      for (const log of logs) expect(log.paperclipInvocationId).toBe("inv-trickle");
    } finally {
      rpcHost.stop();
    }
  });

  it("stamps joined chunks with the invocation id of their own call", async () => {
    const hostToWorker = new PassThrough();
    const workerToHost = new PassThrough();
    const rpcHost = startWorkerRpcHost({ plugin: streamingPlugin(), stdin: hostToWorker, stdout: workerToHost });
    try {
      const peer = new JsonRpcPeer(workerToHost, hostToWorker);
      await peer.call("initialize", initializeParams(manifest));
      const calls = ["a", "b"].map((tag) => {
        const chunks = Array.from({ length: 2000 }, (_, i) => `${tag}${i};`);
        const invocation = { id: `inv-${tag}`, scope: { companyId: `company-${tag}` } };
        return peer.call("environmentExecute", executeParams(`company-${tag}`, chunks), { invocation });
      });
      await Promise.all(calls);
      const logs = peer.notifications.filter((n) => n.method === "execute.log");
      for (const tag of ["a", "b"]) {
        const mine = logs.filter((n) => n.paperclipInvocationId === `inv-${tag}`);
        const text = (stream) => mine.filter((n) => n.params.stream === stream).map((n) => n.params.chunk).join("");
        const expected = (parity) => Array.from({ length: 2000 }, (_, i) => `${tag}${i};`).filter((_, i) => i % 2 === parity).join("");
        expect(text("stdout")).toBe(expected(0));
        expect(text("stderr")).toBe(expected(1));
      }
    } finally {
      rpcHost.stop();
    }
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
    const callHook = native.NativeProvider.createos().hookCaller();
    const health = callHook("onHealth");
    expect(health).not.toBeInstanceOf(Promise);
    expect(health.value.status).toBe("ok");
    const invalid = callHook("onEnvironmentValidateConfig", { driverKey: "createos", config: null });
    expect(invalid).not.toBeInstanceOf(Promise);
    expect(invalid.value.ok).toBe(false);
    const probe = callHook("onEnvironmentProbe", { driverKey: "createos", config: null });
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
