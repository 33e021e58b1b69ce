// Every field of a CreateOS response that the provider reads, with the vendor type that defines
// it. The vendor's published client (`@nodeops-createos/sandbox`, whose wire types its
// maintainers verify against the live control plane) is the reference: each field listed against
// one of its interfaces must be declared by that interface in the client's `dist/types.d.ts`.
//
// The managed-process API (login terminals, duplex channels) is not modelled by the 0.7.1 client;
// its fields come from the original plugin's spec and the vendor SDK's later `src/types.ts`
// (ManagedProcess, ManagedProcessConnectFrame), and are listed as such. The paginated list
// envelope is the client's `extractPage` (`data.data`, `data.pagination.total`), not an interface.
//
// The list is held to the provider's source too: every snake_case field the CreateOS crate reads
// with `.get("…")` must be in it, so a new read cannot slip in unlisted.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** field (as read) -> where it is defined: `Interface.field` in types.d.ts, or a named source. */
const READS = [
  // JSend envelope of every JSON call (client/envelope.rs).
  ["status", "SuccessEnvelope.status"],
  ["data", "SuccessEnvelope.data"],
  // POST /v1/sandboxes (client/sandboxes.rs create_sandbox).
  ["id", "CreateSandboxResponse.id"],
  // GET /v1/sandboxes/{id} (get_sandbox, transition).
  ["id", "SandboxView.id"],
  ["status", "SandboxView.status"],
  // POST /v1/sandboxes/{id}/fork answers a SandboxView (fork_sandbox).
  ["id", "SandboxView.id"],
  // GET /v1/sandboxes?limit=500&offset=N after a create whose outcome is unknown.
  ["data", "list envelope (client http.js extractPage: data.data)"],
  ["pagination", "list envelope (client http.js extractPage: data.pagination)"],
  ["total", "list envelope (client http.js extractPage: pagination.total)"],
  ["name", "SandboxView.name"],
  ["status", "SandboxView.status"],
  ["id", "SandboxView.id"],
  // GET /v1/rootfs (resolve_rootfs).
  ["default", "RootfsData.default"],
  // POST /v1/sandboxes/{id}/exec, one-shot (workspace preparation, resume's marker check, login).
  ["result", "ExecResponse.result"],
  ["exit_code", "ExecResult.exit_code"],
  ["stdout", "ExecResult.stdout"],
  // POST /v1/sandboxes/{id}/exec?stream=true frames (exec/stream.rs).
  ["hb", "ExecStreamFrame.hb"],
  ["stdout", "ExecStreamFrame.stdout"],
  ["stderr", "ExecStreamFrame.stderr"],
  ["error", "ExecStreamFrame.error"],
  ["exit_code", "ExecStreamFrame.exit_code"],
  // The managed-process API (process/, session/): not in the 0.7.1 client.
  ["process_id", "managed process: ManagedProcess.process_id (spec §3.3; SDK src/types.ts after 0.7.1)"],
  ["tree_exited", "managed process: ManagedProcess.tree_exited (spec §3.3, §7)"],
  ["output", "managed process: wait answer output (spec §5.3)"],
  ["newest_seq", "managed process: ManagedProcessOutputWindow.newest_seq (spec §5.3)"],
  ["exit_code", "managed process: exit frame / wait answer (spec §5.3)"],
  ["signal", "managed process: exit frame / wait answer (spec §5.3)"],
  ["type", "managed process: ManagedProcessConnectFrame.type (spec §5.3)"],
  ["seq", "managed process: ManagedProcessConnectFrame.seq (spec §5.3)"],
  ["stream", "managed process: ManagedProcessConnectFrame.stream (spec §5.3)"],
  ["data_base64", "managed process: ManagedProcessConnectFrame.data_base64 (spec §5.3)"],
  ["error", "managed process: ManagedProcessConnectFrame.error (spec §5.3)"],
];

/** The field names of each `export interface` in the vendor client's types.d.ts. */
function vendorInterfaces() {
  const pkg = require.resolve("@nodeops-createos/sandbox/package.json");
  const text = readFileSync(join(dirname(pkg), "dist", "types.d.ts"), "utf8");
  const interfaces = new Map();
  const block = /export interface (\w+)(?:<[^>]*>)?(?: extends [^{]+)?\s*\{([\s\S]*?)\n\}/g;
  for (const [, name, body] of text.matchAll(block)) {
    const fields = new Set();
    // A field line: optional doc comments stripped first, then `name?: type;`.
    const bare = body.replace(/\/\*\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
    for (const [, field] of bare.matchAll(/^\s*(\w+)\??\s*:/gm)) fields.add(field);
    interfaces.set(name, fields);
  }
  return interfaces;
}

/** Every `.get("snake_case")` literal in the CreateOS provider crate's sources. */
function snakeCaseReads() {
  const reads = new Set();
  const walk = (dir) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith(".rs")) {
        for (const [, field] of readFileSync(path, "utf8").matchAll(/\.get\("([a-z]+(?:_[a-z]+)+)"\)/g)) {
          reads.add(field);
        }
      }
    }
  };
  walk(join(root, "crates", "createos", "src"));
  return reads;
}

describe("CreateOS response fields the provider reads", () => {
  it("are each declared by the vendor type they are listed against", () => {
    const interfaces = vendorInterfaces();
    expect(interfaces.size).toBeGreaterThan(20);
    const checked = READS.filter(([, source]) => /^[A-Z]\w*\.\w+$/.test(source));
    expect(checked.length).toBeGreaterThan(15);
    for (const [field, source] of checked) {
      const [type, declared] = source.split(".");
      expect(declared, source).toBe(field);
      expect(interfaces.has(type), `${type} in types.d.ts`).toBe(true);
      expect([...interfaces.get(type)], source).toContain(field);
    }
  });

  it("include every snake_case field the provider's source reads", () => {
    const listed = new Set(READS.map(([field]) => field));
    const reads = snakeCaseReads();
    expect(reads.size).toBeGreaterThanOrEqual(4);
    for (const field of reads) expect([...listed], `.get("${field}") in crates/createos/src`).toContain(field);
  });

  it("never include a field the vendor's types do not define outside the managed-process API", () => {
    const unmodelled = READS.filter(([, source]) => !/^[A-Z]\w*\.\w+$/.test(source));
    for (const [field, source] of unmodelled) {
      expect(source, field).toMatch(/^(managed process: |list envelope )/);
    }
  });
});
