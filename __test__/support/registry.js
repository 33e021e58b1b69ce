// A local npm registry for the install test: verdaccio on 127.0.0.1, no uplinks (it serves only
// what the test publishes), storage in a temporary folder. Verdaccio (~320 packages) is not a
// devDependency of the repository: it is installed once, with scripts off, from its own lockfile
// (tests/registry/) into a cache folder outside the checkout, keyed by that lockfile.

import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";

import { repoRoot } from "./paths.js";

export const run = promisify(execFile);

const toolSource = path.join(repoRoot, "tests/registry");

/** The verdaccio entry point, installed into the tool cache on first use. */
export async function verdaccioBin() {
  const hash = createHash("sha256")
    .update(readFileSync(path.join(toolSource, "package.json")))
    .update(readFileSync(path.join(toolSource, "package-lock.json")))
    .digest("hex")
    .slice(0, 16);
  const cache = process.env.PAPERCLIP_TEST_TOOLS_DIR || path.join(homedir(), ".cache/paperclip-sandbox-native");
  const dir = path.join(cache, `registry-${hash}`);
  const bin = path.join(dir, "node_modules/verdaccio/bin/verdaccio");
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    for (const file of ["package.json", "package-lock.json"]) cpSync(path.join(toolSource, file), path.join(dir, file));
    await run("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: dir, env: npmEnv() });
  }
  return bin;
}

/** npm runs on this test's Node (>= 24.11), as on the host. */
export function npmEnv(extra = {}) {
  return { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`, ...extra };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts verdaccio with storage in `dir`; resolves with {url, token, stop()}. */
export async function startRegistry(dir) {
  const bin = await verdaccioBin();
  mkdirSync(dir, { recursive: true });
  const config = path.join(dir, "config.yaml");
  writeFileSync(
    config,
    [
      `storage: ${path.join(dir, "storage")}`,
      "auth:",
      "  htpasswd:",
      `    file: ${path.join(dir, "htpasswd")}`,
      "uplinks: {}",
      "packages:",
      "  '**':",
      "    access: $all",
      "    publish: $authenticated",
      "log: { type: stdout, format: json, level: info }",
      "",
    ].join("\n"),
  );
  // Verdaccio prints its address only once listening, but cannot report a port it was given as 0.
  const port = await freePort();
  const child = spawn(process.execPath, [bin, "--config", config, "--listen", `127.0.0.1:${port}`], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const url = await new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      const address = /http address - (http:\/\/127\.0\.0\.1:\d+)\//.exec(line)?.[1];
      if (address) resolve(address);
    });
    exited.then((code) => reject(new Error(`verdaccio exited (${code}): ${stderr}`)));
  });
  const response = await fetch(`${url}/-/user/org.couchdb.user:ci`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "ci", password: "ci-password-not-secret" }),
  });
  const { token } = await response.json();
  return {
    url,
    token,
    async stop() {
      child.kill();
      await exited;
    },
  };
}
