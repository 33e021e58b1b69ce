// A minimal host side of the worker protocol: newline-delimited JSON-RPC 2.0 over a pair of
// streams, as the Paperclip host speaks it. Used both over PassThrough streams (in-process SDK
// host) and over a forked worker's stdio.

/**
 * Calls `onLine` with each newline-terminated line of `input` (UTF-8). Only the new chunk is
 * searched for newlines, so a long line (a 64 MiB execute result) arriving in many chunks costs
 * linear time, not the quadratic rescans of re-joining it per chunk.
 */
function readLines(input, onLine, onClose) {
  let parts = [];
  input.setEncoding("utf8");
  input.on("data", (chunk) => {
    let start = 0;
    let nl;
    while ((nl = chunk.indexOf("\n", start)) !== -1) {
      let line = chunk.slice(start, nl);
      if (parts.length > 0) {
        parts.push(line);
        line = parts.join("");
        parts = [];
      }
      start = nl + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.length > 0) onLine(line);
    }
    if (start < chunk.length) parts.push(start === 0 ? chunk : chunk.slice(start));
  });
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    onClose();
  };
  input.once("end", close);
  input.once("close", close);
}

export class JsonRpcPeer {
  #nextId = 1;
  #pending = new Map();
  #output;

  /** Every line the worker wrote, raw, so tests can check stdout carried only JSON-RPC. */
  lines = [];
  /** Notifications from the worker, in arrival order. */
  notifications = [];
  /** Requests the worker made to the host (`ctx.*` service calls). */
  workerRequests = [];
  /** Listeners called with each notification as it arrives. */
  #listeners = new Set();

  #retain;

  /**
   * `retain: false` keeps neither `lines` nor `notifications` (listeners still see every
   * notification), so a benchmark does not also measure the host holding every line it read.
   */
  constructor(input, output, { retain = true } = {}) {
    this.#output = output;
    this.#retain = retain;
    readLines(
      input,
      (line) => this.#onLine(line),
      () => {
        for (const { reject } of this.#pending.values()) {
          reject(new Error("worker stream closed before the reply"));
        }
        this.#pending.clear();
      },
    );
  }

  #onLine(line) {
    if (this.#retain) this.lines.push(line);
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    if (message.id !== undefined && message.method === undefined) {
      const pending = this.#pending.get(message.id);
      if (pending) {
        this.#pending.delete(message.id);
        pending.resolve(message);
      }
      return;
    }
    if (message.id !== undefined) {
      this.workerRequests.push(message);
      // Tracing is a no-op without a traceparent; everything else a provider must not need.
      const reply =
        message.method === "span.record"
          ? { jsonrpc: "2.0", id: message.id, result: null }
          : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `${message.method} not served by the test host` } };
      this.#output.write(`${JSON.stringify(reply)}\n`);
      return;
    }
    if (this.#retain) this.notifications.push(message);
    for (const listener of this.#listeners) listener(message);
  }

  /**
   * Resolves with the first notification (already received or arriving later) that satisfies
   * `predicate`; rejects after `timeoutMs` so a missing event fails the test instead of hanging.
   */
  waitForNotification(predicate, timeoutMs = 15_000) {
    const seen = this.notifications.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stop();
        reject(new Error("timed out waiting for a notification"));
      }, timeoutMs);
      const stop = this.onNotification((message) => {
        if (!predicate(message)) return;
        clearTimeout(timer);
        stop();
        resolve(message);
      });
    });
  }

  /** Calls `listener` with every notification from now on; returns the unsubscribe function. */
  onNotification(listener) {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Sends a request and resolves with the whole response message ({result} or {error}).
   * `invocation` adds the host's `paperclipInvocation` envelope, as the host does for any call
   * whose params carry a companyId. `paramsText` sends that JSON text as the params instead of
   * `params` (params `JSON.stringify` could not write, such as very deeply nested ones).
   */
  request(method, params, { invocation, paramsText } = {}) {
    const id = this.#nextId++;
    const message = { jsonrpc: "2.0", id, method };
    if (paramsText === undefined) message.params = params;
    if (invocation) message.paperclipInvocation = invocation;
    let line = JSON.stringify(message);
    if (paramsText !== undefined) line = `${line.slice(0, -1)},"params":${paramsText}}`;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#output.write(`${line}\n`);
    });
  }

  /** Like `request`, but resolves with `result` and rejects with the JSON-RPC error. */
  async call(method, params, options) {
    const response = await this.request(method, params, options);
    if (response.error) {
      const error = new Error(response.error.message);
      error.code = response.error.code;
      throw error;
    }
    return response.result;
  }
}

/** The `initialize` params the host sends. */
export function initializeParams(manifest, { instanceId = "test-instance" } = {}) {
  return {
    manifest,
    config: {},
    instanceInfo: { instanceId, hostVersion: "2026.916.1" },
    apiVersion: 1,
  };
}
