// The CreateOS API emulator, driven through the vendor's own published client
// (`@nodeops-createos/sandbox`, whose wire types its maintainers verify against the live control
// plane): every endpoint the provider uses or the emulator serves must succeed or fail as the
// vendor's types and docs say the real server does. Real emulator process, real HTTP.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

import {
  CreateosSandboxAuthError,
  CreateosSandboxClient,
  CreateosSandboxNotFoundError,
  CreateosSandboxServerError,
  CreateosSandboxValidationError,
} from "@nodeops-createos/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";

const KEY = "vendor-conformance-key-1";
const OTHER_KEY = "vendor-conformance-key-2";
const SHAPE = "s-1vcpu-1gb";

/** The vendor's `dist/types.d.ts`, found through the installed package (never a fixed path). */
function vendorTypes() {
  const pkg = createRequire(import.meta.url).resolve("@nodeops-createos/sandbox/package.json");
  return readFileSync(path.join(path.dirname(pkg), "dist/types.d.ts"), "utf8");
}

/** Field names of `export interface <name> … { … }` in the vendor's declarations. */
function interfaceFields(source, name) {
  const start = source.search(new RegExp(`^export interface ${name}\\b[^{]*\\{`, "m"));
  expect(start, `interface ${name} in types.d.ts`).toBeGreaterThanOrEqual(0);
  const body = source.slice(start, source.indexOf("\n}", start));
  return [...body.matchAll(/^ {4}(\w+)\??:/gm)].map((m) => m[1]);
}

const TYPES = vendorTypes();
const fields = (name) => interfaceFields(TYPES, name);

/** Every key of `value` is a field of the vendor's `type`, and no value is null (omitempty). */
function expectShape(value, type) {
  expect(Object.keys(value).filter((k) => !fields(type).includes(k)), `${type} keys`).toEqual([]);
  expect(Object.entries(value).filter(([, v]) => v === null), `${type} nulls`).toEqual([]);
}

/** Resolves to the error `promise` rejects with (failing when it resolves). */
async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

describe("CreateOS emulator through the vendor's client (@nodeops-createos/sandbox)", () => {
  let emulator;
  let client;
  let other;
  const created = [];

  const newClient = (apiKey) => new CreateosSandboxClient({ apiKey, baseUrl: emulator.url, retry: false, timeoutMs: 20_000 });
  const control = async (route, init) => (await fetch(`${emulator.controlUrl}${route}`, init)).json();
  const create = async (request) => {
    const sandbox = await client.createSandbox({ shape: SHAPE, ...request });
    created.push(sandbox);
    return sandbox;
  };

  beforeAll(async () => {
    emulator = await startEmulator("createos-emulator", ["--api-key", KEY, "--other-api-key", OTHER_KEY, "--transition-ms", "20"]);
    client = newClient(KEY);
    other = newClient(OTHER_KEY);
  });

  afterAll(async () => {
    await emulator?.stop();
  });

  it("holds its request-body field lists to the vendor's request types exactly", async () => {
    const lists = await control("/request-types");
    for (const type of ["CreateSandboxRequest", "ForkSandboxRequest", "PatchSandboxRequest", "SetEgressRequest", "ExecRequest"]) {
      expect([...lists[type]].sort(), type).toEqual(fields(type).sort());
    }
  });

  it("serves the catalogue without an API key: healthz, rootfs (not paginated), shapes (paginated)", async () => {
    const keyless = new CreateosSandboxClient({ apiKey: "", baseUrl: emulator.url, retry: false });
    expect(await keyless.healthz()).toEqual({ up: true });
    const rootfs = await keyless.listRootfs();
    expectShape(rootfs, "RootfsData");
    expect(rootfs.rootfs).toContain(rootfs.default);
    expect(rootfs.entries.map((e) => e.name)).toEqual(rootfs.rootfs);
    rootfs.entries.forEach((e) => expectShape(e, "RootfsEntry"));
    const shapes = await keyless.listShapes();
    expect(shapes.map((s) => s.id)).toContain(SHAPE);
    for (const shape of shapes) {
      expectShape(shape, "Shape");
      expect([shape.vcpu, shape.mem_mib, shape.default_disk_mib].every(Number.isInteger)).toBe(true);
    }
    expect(shapes.find((s) => s.id === "s-0.25vcpu-512mb")).toMatchObject({ vcpu: 1, mem_mib: 512, cpu_quota_pct: 25 });
  });

  it("creates synchronously with every field the provider sends, keeps the name, and reads it back", async () => {
    const request = {
      shape: SHAPE,
      rootfs: "debian:12",
      region: "eu-1",
      egress: ["example.com:443"],
      auto_pause_after_seconds: 900,
      ingress_enabled: false,
      name: "pc-0123456789abcdef",
    };
    const raw = await client.http.request("POST", "/v1/sandboxes", { body: request });
    created.push({ id: raw.id });
    expectShape(raw, "CreateSandboxResponse");
    expect(raw).toMatchObject({ name: request.name, shape: SHAPE, rootfs: "debian:12", egress: request.egress, bandwidth_quota_bytes: -1 });
    for (const key of ["id", "ip", "vcpu", "mem_mib", "disk_mib", "spawn_ms"]) expect(raw[key], key).toBeDefined();

    // The POST answered only once the sandbox was running.
    const sandbox = await client.getSandbox(raw.id);
    expectShape(sandbox.data, "SandboxView");
    expect(sandbox.data).toMatchObject({
      id: raw.id,
      status: "running",
      name: request.name,
      shape: SHAPE,
      rootfs: "debian:12",
      region: "eu-1",
      egress: request.egress,
      auto_pause_after_seconds: 900,
      ingress_enabled: false,
    });
    expect(sandbox.data).not.toHaveProperty("labels");
    expect(sandbox.data).not.toHaveProperty("forked_from");

    // Through the typed factory too: the handle is seeded `running`.
    const typed = await create({ rootfs: "devbox:1" });
    expect(typed.status).toBe("running");
    expect(typed.name).toMatch(/\S/);
    expect((await client.getSandbox(typed.id)).status).toBe("running");
  });

  it("refuses a second live sandbox of the same name (409), and frees the name once destroyed", async () => {
    const first = await create({ name: "dup-name" });
    const error = await rejection(create({ name: "dup-name" }));
    expect(error).toBeInstanceOf(CreateosSandboxValidationError);
    expect(error.statusCode).toBe(409);
    expect(error.envelope.status).toBe("fail");
    // Names are per user: another user may use it.
    const theirs = await other.createSandbox({ shape: SHAPE, name: "dup-name" });
    await theirs.destroy();
    await first.destroy();
    const again = await create({ name: "dup-name" });
    expect(again.name).toBe("dup-name");
  });

  it("lists with limit, offset and status, paginated as the vendor's client pages", async () => {
    // At most five creates: enough running sandboxes for two pages of two.
    for (let made = 0; made < 5 && (await client.listSandboxes({ status: "running" })).length < 5; made++) {
      await create({});
    }
    const all = await client.listSandboxes();
    const running = await client.listSandboxes({ status: "running" });
    expect(running.length).toBeGreaterThanOrEqual(5);
    expect(running.every((s) => s.status === "running")).toBe(true);
    all.forEach((s) => expectShape(s.data, "SandboxView"));
    expect(await client.listSandboxes({ limit: 2 })).toHaveLength(2);

    const page = await client.http.request("GET", "/v1/sandboxes", { query: { limit: 2, offset: 2 } });
    expect(Object.keys(page).sort()).toEqual(["data", "pagination"]);
    expect(page.pagination).toEqual({ total: all.length, limit: 2, offset: 2, count: 2 });
    expect(page.data.map((v) => v.id)).toEqual(all.slice(2, 4).map((s) => s.id));

    // Walking every page of two gives the same rows, in the same order, as the client's list.
    const walked = [];
    for (let offset = 0; ; ) {
      const { data, pagination } = await client.http.request("GET", "/v1/sandboxes", { query: { limit: 2, offset } });
      walked.push(...data.map((v) => v.id));
      offset += pagination.count;
      if (pagination.count === 0 || offset >= pagination.total) break;
    }
    expect(walked.length).toBeGreaterThan(2);
    expect(walked).toEqual(all.map((s) => s.id));

    const clamped = await client.http.request("GET", "/v1/sandboxes", { query: { limit: 100_000 } });
    expect(clamped.pagination.limit).toBe(500);
    const defaulted = await client.http.request("GET", "/v1/sandboxes");
    expect(defaulted.pagination).toMatchObject({ limit: 50, offset: 0 });

    // No label filter on this API.
    const labelled = await rejection(client.http.request("GET", "/v1/sandboxes", { query: { label: "a=b" } }));
    expect(labelled).toBeInstanceOf(CreateosSandboxValidationError);
  });

  it("patches the idle auto-pause timeout, pauses and resumes", async () => {
    const sandbox = await create({});
    await sandbox.setAutoPause(600);
    expect(sandbox.data.auto_pause_after_seconds).toBe(600);
    expectShape(sandbox.data, "SandboxView");
    await sandbox.setAutoPause(null);
    expect(sandbox.data).not.toHaveProperty("auto_pause_after_seconds");
    const outOfRange = await rejection(sandbox.setAutoPause(30));
    expect(outOfRange).toBeInstanceOf(CreateosSandboxValidationError);

    await sandbox.pause();
    expect(["pausing", "paused"]).toContain(sandbox.status);
    await sandbox.waitUntilPaused({ timeoutMs: 10_000 });
    expect(sandbox.status).toBe("paused");
    const busy = await rejection(sandbox.pause());
    expect(busy).toBeInstanceOf(CreateosSandboxValidationError);
    await sandbox.resume();
    await sandbox.waitUntilRunning({ timeoutMs: 10_000 });
    expect(sandbox.status).toBe("running");
  });

  it("reads and replaces the egress allowlist", async () => {
    const sandbox = await create({ egress: ["a.example:443"] });
    const read = await sandbox.getEgress();
    expectShape(read, "EgressView");
    expect(read).toEqual({ id: sandbox.id, egress: ["a.example:443"] });
    expect(await sandbox.setEgress(["b.example:80", "10.0.0.0/8"])).toEqual({ id: sandbox.id, egress: ["b.example:80", "10.0.0.0/8"] });
    expect((await sandbox.getEgress()).egress).toEqual(["b.example:80", "10.0.0.0/8"]);
    expect(await sandbox.setEgress(null)).toEqual({ id: sandbox.id, egress: [] });
  });

  it("forks a paused sandbox with the provider's body; the fork has the template's files", async () => {
    const template = await create({ egress: ["a.example:443"] });
    await template.files.upload("/paperclip-workspace/marker.txt", "from the template\n");
    await template.pause();
    await template.waitUntilPaused({ timeoutMs: 10_000 });
    const fork = await template.fork({ start_paused: false, egress: ["b.example:443"], ingress_enabled: false });
    created.push(fork);
    expectShape(fork.data, "SandboxView");
    expect(fork.data).toMatchObject({ forked_from: template.id, egress: ["b.example:443"], ingress_enabled: false });
    expect(fork.id).not.toBe(template.id);
    await fork.waitUntilRunning({ timeoutMs: 10_000 });
    const cat = await fork.runCommand("cat", ["/paperclip-workspace/marker.txt"]);
    expect(cat.result).toMatchObject({ stdout: "from the template\n", exit_code: 0 });
    expect((await client.getSandbox(template.id)).status).toBe("paused");

    const unknown = await rejection(client.http.request("POST", `/v1/sandboxes/${template.id}/fork`, { body: { labels: { a: "b" } } }));
    expect(unknown).toBeInstanceOf(CreateosSandboxValidationError);
    expect(unknown.envelope.data.field).toBe("labels");
  });

  it("runs one-shot commands (ExecResponse) and streams NDJSON frames (stdout, stderr, exit)", async () => {
    const sandbox = await create({});
    const script = "echo out; echo err >&2; exit 3";
    const response = await sandbox.runCommand("bash", ["-c", script]);
    expectShape(response, "ExecResponse");
    expectShape(response.result, "ExecResult");
    expect(response.result).toEqual({ stdout: "out\n", stderr: "err\n", exit_code: 3 });
    expect(Number.isInteger(response.exec_ms)).toBe(true);
    expect((await sandbox.runCommand("pwd")).result.stdout).toBe("/paperclip-workspace\n");

    const events = [];
    for await (const event of sandbox.streamCommand("bash", ["-c", "echo one; echo two >&2; printf three; exit 4"])) {
      events.push(event);
    }
    const text = (type) => events.filter((e) => e.type === type).map((e) => e.data).join("");
    expect(text("stdout")).toBe("one\nthree");
    expect(text("stderr")).toBe("two\n");
    expect(events.at(-1)).toEqual({ type: "exit", exitCode: 4 });
    expect(events.filter((e) => e.type === "error")).toEqual([]);

    // The API's ExecRequest has no stdin, env or cwd: the emulator refuses them.
    for (const field of ["stdin", "env", "cwd", "timeout_ms"]) {
      const error = await rejection(client.http.request("POST", `/v1/sandboxes/${sandbox.id}/exec`, { body: { cmd: "true", [field]: "x" } }));
      expect(error, field).toBeInstanceOf(CreateosSandboxValidationError);
      expect(error.statusCode).toBe(400);
      expect(error.envelope.data.field).toBe(field);
    }
  });

  it("uploads and downloads bytes unchanged", async () => {
    const sandbox = await create({});
    const bytes = new Uint8Array(70_000).map((_, i) => (i * 7 + 3) % 256);
    expect(await sandbox.files.upload("/paperclip-workspace/deep/dir/blob.bin", bytes)).toBeUndefined();
    const back = new Uint8Array(await sandbox.files.download("/paperclip-workspace/deep/dir/blob.bin"));
    expect(back.length).toBe(bytes.length);
    expect(Buffer.compare(Buffer.from(back), Buffer.from(bytes))).toBe(0);
    const missing = await rejection(sandbox.files.download("/paperclip-workspace/none.bin"));
    expect(missing).toBeInstanceOf(CreateosSandboxNotFoundError);
  });

  it("destroys: the row stays visible as destroyed, is listed by status, and is no longer counted", async () => {
    const before = (await control("/counts")).sandboxes;
    const sandbox = await create({ name: "to-destroy" });
    expect((await control("/counts")).sandboxes).toBe(before + 1);
    const result = await sandbox.destroy();
    expectShape(result, "DestroyedResponse");
    expect(result).toEqual({ id: sandbox.id, status: "destroyed" });
    await sandbox.waitUntilDestroyed({ timeoutMs: 10_000 });
    expect(sandbox.status).toBe("destroyed");
    expectShape(sandbox.data, "SandboxView");
    expect(sandbox.data).toMatchObject({ id: sandbox.id, name: "to-destroy", status: "destroyed" });
    expect(Date.parse(sandbox.data.destroyed_at)).not.toBeNaN();
    expect(sandbox.data).not.toHaveProperty("ip");

    const destroyed = await client.listSandboxes({ status: "destroyed" });
    expect(destroyed.map((s) => s.id)).toContain(sandbox.id);
    expect(destroyed.every((s) => s.status === "destroyed")).toBe(true);
    expect((await client.listSandboxes({ status: "running" })).map((s) => s.id)).not.toContain(sandbox.id);
    expect((await control("/counts")).sandboxes).toBe(before);

    // A second destroy is the documented no-op; anything else on a destroyed row is 404.
    expect(await sandbox.destroy()).toEqual({ id: sandbox.id, status: "destroyed" });
    expect(await rejection(sandbox.runCommand("true"))).toBeInstanceOf(CreateosSandboxNotFoundError);
    expect(await rejection(sandbox.pause())).toBeInstanceOf(CreateosSandboxNotFoundError);
  });

  it("answers the error envelopes the client types: 401, 404 (missing and foreign), 400 and 5xx", async () => {
    const mine = await create({});

    const auth = await rejection(newClient("wrong-key").listSandboxes());
    expect(auth).toBeInstanceOf(CreateosSandboxAuthError);
    expect(auth.statusCode).toBe(401);
    expect(auth.envelope.status).toBe("fail");
    expect(await rejection(newClient("wrong-key").getSandbox(mine.id))).toBeInstanceOf(CreateosSandboxAuthError);

    const missing = await rejection(client.getSandbox("sb_0000000000000000"));
    expect(missing).toBeInstanceOf(CreateosSandboxNotFoundError);
    expect(missing.envelope.status).toBe("fail");
    expect(JSON.stringify(missing.envelope.data)).toMatch(/sandbox not found/);

    // Another user's sandbox is 404 to them, for reads and writes, and not in their list.
    expect(await rejection(other.getSandbox(mine.id))).toBeInstanceOf(CreateosSandboxNotFoundError);
    const foreign = await other.listSandboxes();
    expect(foreign.map((s) => s.id)).not.toContain(mine.id);
    expect(await rejection(other.http.request("DELETE", `/v1/sandboxes/${mine.id}`))).toBeInstanceOf(CreateosSandboxNotFoundError);
    expect(await rejection(other.http.request("POST", `/v1/sandboxes/${mine.id}/exec`, { body: { cmd: "true" } }))).toBeInstanceOf(
      CreateosSandboxNotFoundError,
    );
    expect((await client.getSandbox(mine.id)).status).toBe("running");

    const badShape = await rejection(client.createSandbox({ shape: "no-such-shape" }));
    expect(badShape).toBeInstanceOf(CreateosSandboxValidationError);
    expect(badShape.statusCode).toBe(400);
    expect(badShape.envelope.status).toBe("fail");
    const notJson = await rejection(client.http.request("POST", "/v1/sandboxes", { rawBody: "{", contentType: "application/json" }));
    expect(notJson).toBeInstanceOf(CreateosSandboxValidationError);

    // A field the vendor's CreateSandboxRequest lacks is refused, naming the field.
    const labels = await rejection(
      client.http.request("POST", "/v1/sandboxes", { body: { shape: SHAPE, labels: { "paperclip.ai/acquisition-id": "x" } } }),
    );
    expect(labels).toBeInstanceOf(CreateosSandboxValidationError);
    expect(labels.statusCode).toBe(400);
    expect(labels.envelope).toMatchObject({ status: "fail", data: { field: "labels" } });
    for (const [method, route, body] of [
      ["PATCH", `/v1/sandboxes/${mine.id}`, { auto_pause_after_seconds: 600, labels: {} }],
      ["PUT", `/v1/sandboxes/${mine.id}/egress`, { egress: [], mode: "deny" }],
    ]) {
      const error = await rejection(client.http.request(method, route, { body }));
      expect(error, route).toBeInstanceOf(CreateosSandboxValidationError);
      expect(error.envelope.data.field).toBe(Object.keys(body)[1]);
    }

    // 5xx: the `error` envelope with a numeric code, which the client turns into its message.
    const fault = await control("/faults", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ method: "GET", path: "/v1/sandboxes/*", times: 1, action: { kind: "status", status: 500 } }),
    });
    const server = await rejection(client.getSandbox(mine.id));
    await fetch(`${emulator.controlUrl}/faults/${fault.id}`, { method: "DELETE" });
    expect(server).toBeInstanceOf(CreateosSandboxServerError);
    expect(server.statusCode).toBe(500);
    expect(server.envelope).toEqual({ status: "error", message: "emulator fault", code: 500 });
    expect(server.message).toBe("emulator fault");
  });

  it("leaves nothing running once every sandbox is destroyed", async () => {
    for (const sandbox of created) {
      await client.http.request("DELETE", `/v1/sandboxes/${sandbox.id}`);
    }
    for (const sandbox of await other.listSandboxes({ status: "running" })) await sandbox.destroy();
    expect(await control("/counts")).toEqual({ sandboxes: 0, liveProcesses: 0, managedProcesses: 0 });
  });
});
