// The packages installed the way the Paperclip host installs a plugin: tarballs from
// `npm run pack` (reusing the release addon already built) published to a local registry on
// 127.0.0.1, then `npm install <plugin> --prefix <empty dir> --save --ignore-scripts --registry
// <local>`; the installed worker (the file the installed manifest's `entrypoints.worker` names)
// forked as the host forks it and driven through a lease lifecycle against the emulators; the
// installed `paperclip-sandbox` CLI run; and the error a user meets without the platform package.
//
// "No install script ran": npm runs every lifecycle script through `script-shell`, here a canary
// that records its call. "Nothing outside the registry": a fresh npm cache and user config, and
// every other host sent to a proxy that does not exist; every package resolves to the registry.

import { execFile } from "node:child_process";
import { chmod, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulator } from "../lib/emulators.js";
import { ForkedWorker } from "../lib/forked-worker.js";
import { layoutLocal, pack } from "../scripts/pack.js";
import { repoRoot } from "./support/paths.js";
import { npmEnv, run, startRegistry } from "./support/registry.js";

const TIMEOUT = 240_000;
const PLATFORM_PACKAGE = "paperclip-sandbox-native-linux-x64-gnu";

/** Runs a command to its end: {code, stdout, stderr} (never rejects on a non-zero exit). */
function runExit(file, args, options) {
  return new Promise((resolve) => {
    execFile(file, args, { encoding: "utf8", ...options }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

describe("installed from a local registry with --ignore-scripts", () => {
  let work;
  let registry;
  let tarballs;
  let canaryLog;
  let createosEmulator;
  let kubernetesEmulator;
  const installs = {};

  /** npm as the host runs it, isolated: only the local registry, no scripts, fresh cache. */
  async function npmInstall(spec, prefix, extra = []) {
    const userconfig = path.join(work, "consumer.npmrc");
    await writeFile(userconfig, "");
    return run(
      "npm",
      [
        "install", spec, "--prefix", prefix, "--save", "--ignore-scripts", "--registry", registry.url,
        "--userconfig", userconfig, "--cache", path.join(work, `cache-${path.basename(prefix)}`),
        "--script-shell", path.join(work, "canary.sh"),
        "--proxy", "http://127.0.0.1:9", "--https-proxy", "http://127.0.0.1:9", "--noproxy", "127.0.0.1",
        "--no-audit", "--no-fund", "--update-notifier=false", "--fetch-retries", "0",
        ...extra,
      ],
      { env: npmEnv(), cwd: prefix },
    );
  }

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), "paperclip-install-"));
    canaryLog = path.join(work, "scripts-that-ran.log");
    await writeFile(path.join(work, "canary.sh"), `#!/bin/sh\necho "$@" >> '${canaryLog}'\nexit 1\n`);
    await chmod(path.join(work, "canary.sh"), 0o755);
    tarballs = pack({ out: path.join(work, "npm"), build: false });
    registry = await startRegistry(path.join(work, "registry"));
    const publisher = path.join(work, "publisher.npmrc");
    await writeFile(publisher, `//${new URL(registry.url).host}/:_authToken=${registry.token}\n`);
    const publish = (tarball) =>
      run("npm", ["publish", tarball, "--registry", registry.url, "--userconfig", publisher, "--ignore-scripts", "--cache", path.join(work, "cache-publish")], {
        env: npmEnv(),
      });
    // The SDK and its dependencies, packed from this checkout's installed copies (exactly the
    // lockfile's versions, no network).
    for (const dir of ["@paperclipai/plugin-sdk", "@paperclipai/shared", "zod"]) {
      const out = await run("npm", ["pack", path.join(repoRoot, "node_modules", dir), "--ignore-scripts", "--json", "--pack-destination", work], { env: npmEnv() });
      await publish(path.join(work, JSON.parse(out.stdout)[0].filename));
    }
    for (const tarball of [tarballs.platform, tarballs.root, tarballs.plugins.createos, tarballs.plugins.kubernetes]) await publish(tarball);
    for (const provider of ["createos", "kubernetes"]) {
      const prefix = await mkdtemp(path.join(work, `install-${provider}-`));
      const result = await npmInstall(`@paperclipai/plugin-${provider}`, prefix);
      installs[provider] = { prefix, output: result.stdout + result.stderr };
    }
    createosEmulator = await startEmulator("createos-emulator", ["--transition-ms", "20"]);
    kubernetesEmulator = await startEmulator("kubernetes-emulator", ["--fast"]);
  }, TIMEOUT);

  afterAll(async () => {
    await createosEmulator?.stop();
    await kubernetesEmulator?.stop();
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("packs agreeing versions, and the root package ships no binary and no scripts", async () => {
    const { stdout } = await run("tar", ["tzf", tarballs.root]);
    expect(stdout).not.toMatch(/\.node$/m);
    expect(stdout).toMatch(/^package\/lib\/lifecycle\.js$/m);
    const manifest = JSON.parse((await run("tar", ["xzf", tarballs.root, "-O", "package/package.json"])).stdout);
    expect(manifest.scripts).toBeUndefined();
    expect(manifest.optionalDependencies[PLATFORM_PACKAGE]).toBe(manifest.version);
    const platform = (await run("tar", ["tzf", tarballs.platform])).stdout.trim().split("\n").sort();
    expect(platform).toEqual(["package/README.md", "package/package.json", "package/paperclip-sandbox-native.linux-x64-gnu.node"]);
  });

  it.each(["createos", "kubernetes"])("%s: no install script ran and every package came from the local registry", async (provider) => {
    const { prefix } = installs[provider];
    expect(existsSync(canaryLog)).toBe(false);
    const lock = JSON.parse(await readFile(path.join(prefix, "package-lock.json"), "utf8"));
    const packages = Object.entries(lock.packages).filter(([key]) => key !== "");
    expect(packages.map(([key]) => key)).toEqual(
      expect.arrayContaining([`node_modules/@paperclipai/plugin-${provider}`, "node_modules/paperclip-sandbox-native", `node_modules/${PLATFORM_PACKAGE}`, "node_modules/@paperclipai/plugin-sdk"]),
    );
    for (const [key, entry] of packages) {
      const installed = existsSync(path.join(prefix, key));
      // Not installed: an optional package for another platform, which the registry does not have.
      if (!installed) expect({ key, optional: entry.optional }).toEqual({ key, optional: true });
      // Installed: a registry tarball (npm leaves `resolved` out for the package it was asked for).
      else {
        expect({ key, link: entry.link, integrity: /^sha512-/.test(entry.integrity) }).toEqual({ key, link: undefined, integrity: true });
        if (entry.resolved !== undefined) expect(entry.resolved.startsWith(`${registry.url}/`)).toBe(true);
      }
    }
    const root = JSON.parse(await readFile(path.join(prefix, "package.json"), "utf8"));
    expect(Object.keys(root.dependencies)).toEqual([`@paperclipai/plugin-${provider}`]);
    expect(await readdir(path.join(prefix, "node_modules/paperclip-sandbox-native"))).not.toContain("paperclip-sandbox-native.linux-x64-gnu.node");
  });

  /** Forks the installed worker as the host does; checks the binary came from the platform package. */
  async function startInstalled(provider) {
    const root = path.join(installs[provider].prefix, "node_modules/@paperclipai", `plugin-${provider}`);
    const worker = await ForkedWorker.start(root);
    const maps = await readFile(`/proc/${worker.child.pid}/maps`, "utf8");
    expect(maps).toContain(path.join(installs[provider].prefix, "node_modules", PLATFORM_PACKAGE, "paperclip-sandbox-native.linux-x64-gnu.node"));
    const addons = maps.split("\n").filter((line) => line.endsWith(".node")).map((line) => line.slice(line.indexOf("/")));
    expect(addons.filter((file) => file.startsWith(repoRoot))).toEqual([]);
    return worker;
  }

  async function lifecycle(provider, config) {
    const worker = await startInstalled(provider);
    try {
      const base = { driverKey: provider, companyId: "company-1", environmentId: "env-1" };
      const invocation = (id) => ({ invocation: { id, scope: { companyId: "company-1" } } });
      expect(worker.initializeResult.ok).toBe(true);
      expect(await worker.call("environmentValidateConfig", { driverKey: provider, config })).toMatchObject({ ok: true });
      expect(await worker.call("environmentProbe", { ...base, config }, invocation("probe"))).toMatchObject({ ok: true });
      const lease = await worker.call("environmentAcquireLease", { ...base, config, runId: "run-1" }, invocation("acquire"));
      const cwd = lease.metadata.remoteCwd ?? "/workspace";
      const result = await worker.call(
        "environmentExecute",
        { ...base, config, lease, command: "sh", args: ["-c", "echo installed-line-1; echo installed-line-2"], cwd },
        invocation("execute"),
      );
      expect(result).toMatchObject({ exitCode: 0 });
      const streamed = worker.rpc.notifications
        .filter((n) => n.method === "execute.log" && n.paperclipInvocationId === "execute")
        .map((n) => n.params.chunk)
        .join("");
      expect(streamed).toContain("installed-line-1\ninstalled-line-2");
      await worker.call("environmentReleaseLease", { ...base, config, providerLeaseId: lease.providerLeaseId, leaseMetadata: lease.metadata }, invocation("release"));
      const { exit } = await worker.shutdown();
      expect(exit).toEqual({ code: 0, signal: null });
    } finally {
      worker.kill();
    }
  }

  it("createos: initialize -> validate -> probe -> acquire -> execute (streamed) -> release", async () => {
    await lifecycle("createos", { apiUrl: createosEmulator.url, apiKey: createosEmulator.apiKey, shape: "s-1vcpu-1gb" });
  }, TIMEOUT);

  it("kubernetes: initialize -> validate -> probe -> acquire -> execute (streamed) -> release", async () => {
    const kubeconfig = await readFile(kubernetesEmulator.kubeconfig, "utf8");
    await lifecycle("kubernetes", { kubeconfig, companySlug: "acme", egressMode: "cilium" });
  }, TIMEOUT);

  it("the installed paperclip-sandbox CLI explains and checks", async () => {
    const { prefix } = installs.createos;
    const cli = path.join(prefix, "node_modules/.bin/paperclip-sandbox");
    const options = { cwd: prefix, env: npmEnv() };
    const explained = await runExit(cli, ["explain", "CreateOS API URL is invalid."], options);
    expect(explained.stderr).toBe("");
    expect(explained.code).toBe(0);
    expect(explained.stdout).toContain("CreateOS API URL is invalid.");
    expect((await runExit(cli, ["explain", "not one of ours"], options)).code).toBe(1);
    const config = path.join(work, "createos-check.json");
    await writeFile(config, JSON.stringify({ apiUrl: createosEmulator.url, apiKey: createosEmulator.apiKey, shape: "s-1vcpu-1gb" }));
    const checked = await runExit(cli, ["check", "--provider", "createos", "--config", config], options);
    expect(checked.stdout).toContain("PASSED (exit 0)");
    expect(checked.code).toBe(0);
    expect(checked.stdout).not.toContain(createosEmulator.apiKey);
    expect((await runExit(cli, ["check", "--provider", "kubernetes", "--config", config], options)).code).toBe(1);
  }, TIMEOUT);

  it("lays out self-contained local-path plugins the host accepts", async () => {
    const folders = layoutLocal(tarballs, { out: path.join(work, "local"), registry: registry.url });
    expect(existsSync(canaryLog)).toBe(false);
    for (const [provider, dir] of Object.entries(folders)) {
      const json = JSON.parse(await readFile(path.join(dir, "package.json"), "utf8"));
      // The host's standalone check: the SDK and every `dependencies` entry in the package's own node_modules.
      for (const name of ["@paperclipai/plugin-sdk", ...Object.keys(json.dependencies)]) {
        expect(existsSync(path.join(dir, "node_modules", name, "package.json"))).toBe(true);
      }
      expect(existsSync(path.join(dir, json.paperclipPlugin.manifest))).toBe(true);
      const worker = await ForkedWorker.start(dir);
      try {
        const maps = await readFile(`/proc/${worker.child.pid}/maps`, "utf8");
        expect(maps).toContain(path.join(dir, "node_modules", PLATFORM_PACKAGE));
        expect(await worker.call("environmentValidateConfig", { driverKey: provider, config: {} })).toMatchObject({ ok: false });
        expect((await worker.shutdown()).exit).toEqual({ code: 0, signal: null });
      } finally {
        worker.kill();
      }
    }
  }, TIMEOUT);

  it("without its platform package, says which platform and package", async () => {
    const prefix = await mkdtemp(path.join(work, "install-no-binary-"));
    await npmInstall("paperclip-sandbox-native", prefix, ["--omit=optional"]);
    expect(existsSync(path.join(prefix, "node_modules", PLATFORM_PACKAGE))).toBe(false);
    const result = await runExit(path.join(prefix, "node_modules/.bin/paperclip-sandbox"), ["explain", "CreateOS API URL is invalid."], { cwd: prefix, env: npmEnv() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("no native binary for this platform (linux-x64-gnu");
    expect(result.stderr).toContain(`${PLATFORM_PACKAGE}@0.1.0`);
  }, TIMEOUT);
});
