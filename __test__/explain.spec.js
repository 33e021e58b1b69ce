// The error reference from JavaScript: the addon's explainError and the paperclip-sandbox CLI.
// The catalogue itself (coverage of every contract line, docs staleness) is tested in Rust
// (crates/error-catalog); here: the binding's shape and the CLI's output and exit codes.

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import * as native from "../index.js";
import { contractDir, repoRoot } from "./support/paths.js";

const cli = path.join(repoRoot, "bin", "paperclip-sandbox.js");

function run(args, input) {
  const result = spawnSync(process.execPath, [cli, ...args], {
    cwd: repoRoot,
    encoding: "utf8",
    input,
    timeout: 20_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function contractLines(file) {
  return readFileSync(path.join(contractDir, file), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
}

describe("explainError", () => {
  it("returns the full entry for a catalogued message", () => {
    const entry = native.explainError("CreateOS workspace requires a lease from this environment.");
    expect(entry).toEqual({
      code: "CREATEOS_WORKSPACE_LEASE_MISMATCH",
      provider: "createos",
      kind: "thrown",
      template: "CreateOS workspace requires a lease from this environment.",
      hooks: ["onEnvironmentRealizeWorkspace"],
      meaning: expect.any(String),
      causes: expect.arrayContaining([expect.any(String)]),
      fix: "Re-acquire a fresh lease for this environment and pass that lease to the realize call.",
    });
  });

  it("matches interpolated messages and prefers the most specific template", () => {
    expect(native.explainError("CreateOS request failed (HTTP 404) during sandbox lifecycle.")?.code).toBe(
      "CREATEOS_HTTP_ERROR",
    );
    expect(
      native.explainError("The Kubernetes job backend cannot honor a requested lease deadline; use the sandbox-cr backend.")
        ?.code,
    ).toBe("K8S_JOB_DEADLINE_UNSUPPORTED");
    expect(native.explainError("Kubernetes syncIn directory transfer failed (exit 42): ESCAPE")?.code).toBe(
      "K8S_SYNC_TRANSFER_FAILED",
    );
    expect(native.explainError("Kubernetes post-upload command failed (exit 1): boom")?.code).toBe(
      "K8S_POST_UPLOAD_COMMAND_FAILED",
    );
    expect(native.explainError("Expected boolean, received string")?.code).toBe("K8S_CONFIG_BOOLEAN_AS_STRING");
    expect(native.explainError("Expected number, received string")?.code).toBe("K8S_CONFIG_TYPE_MISMATCH");
    expect(native.explainError("Error: CreateOS connection failed.\n")?.code).toBe("CREATEOS_CONNECTION_FAILED");
  });

  it("explains a message exactly as a provider throws it", () => {
    const error = new Error("Sandbox ns/pc-1 is Terminating — cannot wait for Ready");
    expect(native.explainError(error.message)?.provider).toBe("kubernetes");
    expect(native.explainError(String(error))?.code).toBe("K8S_SANDBOX_TERMINATING");
  });

  it("returns null for an uncatalogued message", () => {
    expect(native.explainError("The operation was aborted due to a cosmic ray")).toBeNull();
    expect(native.explainError("")).toBeNull();
  });

  it("explains every contract template of both providers", () => {
    for (const [file, provider] of [
      ["createos-errors.txt", "createos"],
      ["kubernetes-errors.txt", "kubernetes"],
    ]) {
      const codes = new Set();
      for (const line of contractLines(file)) {
        const entry = native.explainError(line);
        expect(entry, line).not.toBeNull();
        expect(entry.provider, line).toBe(provider);
        codes.add(entry.code);
      }
      expect(codes.size).toBeGreaterThan(80);
    }
  });
});

describe("paperclip-sandbox CLI", () => {
  it("explain prints the entry readably and exits 0", () => {
    const { code, stdout } = run(["explain", "CreateOS API URL is invalid."]);
    expect(code).toBe(0);
    expect(stdout).toContain("CREATEOS_API_URL_INVALID  (createos, validation)");
    for (const heading of ["Message", "Raised by", "What it means", "Common causes", "Fix"]) {
      expect(stdout).toMatch(new RegExp(`^${heading}$`, "m"));
    }
    expect(stdout).toContain("onEnvironmentValidateConfig");
    expect(stdout).toContain("docs/errors.md#createos_api_url_invalid");
  });

  it("explain joins an unquoted message and reads stdin with -", () => {
    const joined = run(["explain", "Kubernetes", "login", "PTY:", "lease", "has", "expired"]);
    expect(joined.code).toBe(0);
    expect(joined.stdout).toContain("K8S_LOGIN_PTY_LEASE_EXPIRED");
    const piped = run(["explain", "-"], "Job is Failed\n");
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain("K8S_RESUME_JOB_FINISHED");
  });

  it("explain also explains a catalogued message embedded in the message", () => {
    const { code, stdout } = run(["explain", "Kubernetes syncOut directory transfer failed (exit 42): ESCAPE"]);
    expect(code).toBe(0);
    expect(stdout).toContain("K8S_SYNC_TRANSFER_FAILED");
    expect(stdout).toContain("Embedded: K8S_SYNC_SCRIPT_ESCAPE  (kubernetes, diagnostic)");
  });

  it("explain --json prints the entry as JSON", () => {
    const { code, stdout } = run(["explain", "--json", "Invalid CIDR"]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ code: "K8S_CONFIG_CIDR_INVALID", provider: "kubernetes" });
  });

  it("explain exits 1 for an unknown message", () => {
    const { code, stdout, stderr } = run(["explain", "something else entirely"]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain("No catalogued error matches this message");
  });

  it("explain without a message is a usage error", () => {
    const { code, stderr } = run(["explain"], "");
    expect(code).toBe(2);
    expect(stderr).toContain("explain needs");
  });

  it("--help lists explain and check", () => {
    const { code, stdout } = run(["--help"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^ {2}explain /m);
    expect(stdout).toMatch(/^ {2}check /m);
  });

  it("check without --provider is a usage error (check itself: __test__/cli.spec.js)", () => {
    const { code, stderr } = run(["check", "--emulator"]);
    expect(code).toBe(2);
    expect(stderr).toContain("check needs --provider createos|kubernetes");
  });

  it("an unknown command is a usage error", () => {
    const { code, stderr } = run(["frobnicate"]);
    expect(code).toBe(2);
    expect(stderr).toContain("unknown command: frobnicate");
    expect(stderr).toContain("Usage: paperclip-sandbox");
  });
});
