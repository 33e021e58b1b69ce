// How plugin-kit finds the native addon (its own loader, not the napi-generated index.js): the
// NAPI_RS_NATIVE_LIBRARY_PATH override, the binary beside the package, the platform package, and
// the errors a user meets when the addon cannot serve a plugin: a binary built for another
// Node.js ABI, no binary at all, and a plugin whose paperclip-sandbox-native has another version
// than the one it pins. (No binary from a real install: __test__/install.spec.js.)

import { execFile } from "node:child_process";
import { copyFile, cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { repoRoot } from "./support/paths.js";

const run = promisify(execFile);

/** Runs node on `args` to its end: {code, stdout, stderr}. */
function node(args, env = {}, cwd = undefined) {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd, encoding: "utf8", env: { PATH: process.env.PATH, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
  });
}

const PLATFORM = "linux-x64-gnu";
const BINARY = `paperclip-sandbox-native.${PLATFORM}.node`;

// Loads the addon through plugin-kit, answers one hook, and prints the `.node` files Node loaded.
const LOAD_AND_CALL = [
  'const kit = await import("paperclip-sandbox-native/plugin-kit");',
  "const native = await kit.loadNative();",
  'const health = await kit.invoke(() => native.NativeProvider.createos().hookCaller()("onHealth"));',
  'const { createRequire } = await import("node:module");',
  "const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => file.endsWith('.node'));",
  "console.log(JSON.stringify({ status: health.status, loaded }));",
].join("\n");
const REPORT_FAILURE = '.catch((e) => { console.error(e.message); console.error(String(e.cause?.message)); process.exit(3); })';

/**
 * An installed layout without a checkout: node_modules/paperclip-sandbox-native (its loader,
 * plugin-kit and package.json, no binary) and, with `platformPackage`, the platform package
 * carrying the binary. Returns the folder to run node in.
 */
async function installedLayout(work, name, { platformPackage }) {
  const app = path.join(work, name);
  const root = path.join(app, "node_modules/paperclip-sandbox-native");
  await mkdir(path.join(root, "plugin-kit"), { recursive: true });
  for (const file of ["package.json", "index.js", "plugin-kit/index.js"]) await copyFile(path.join(repoRoot, file), path.join(root, file));
  if (platformPackage) {
    const carrier = path.join(app, `node_modules/paperclip-sandbox-native-${PLATFORM}`);
    await mkdir(carrier, { recursive: true });
    await copyFile(path.join(repoRoot, `npm/${PLATFORM}/package.json`), path.join(carrier, "package.json"));
    await copyFile(path.join(repoRoot, BINARY), path.join(carrier, BINARY));
  }
  await writeFile(path.join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  return app;
}

describe("native load errors", () => {
  let work;
  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), "native-load-errors-"));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it("names another Node.js ABI", async () => {
    // A classic (non-N-API) addon registered for Node 20's ABI (NODE_MODULE_VERSION 115).
    const source = path.join(work, "other-abi.c");
    await writeFile(
      source,
      [
        "struct node_module { int nm_version; unsigned int nm_flags; void *nm_dso_handle; const char *nm_filename;",
        "  void *nm_register_func; void *nm_context_register_func; const char *nm_modname; void *nm_priv; void *nm_link; };",
        "extern void node_module_register(void *module);",
        "static void init(void *exports, void *module, void *priv) { (void)exports; (void)module; (void)priv; }",
        'static struct node_module module = { 115, 0, 0, "other-abi.c", (void *)init, 0, "other_abi", 0, 0 };',
        "__attribute__((constructor)) static void load(void) { node_module_register(&module); }",
        "",
      ].join("\n"),
    );
    const binary = path.join(work, "other-abi.node");
    await run("cc", ["-shared", "-fPIC", "-o", binary, source]);
    const { code, stderr } = await node(
      ["--input-type=module", "-e", 'import("paperclip-sandbox-native/plugin-kit").then((kit) => kit.loadNative()).catch((e) => { console.error(e.message); process.exit(3); })'],
      { NAPI_RS_NATIVE_LIBRARY_PATH: binary },
    );
    expect(code).toBe(3);
    expect(stderr).toContain(`paperclip-sandbox-native: ${binary} was built for another Node.js ABI (NODE_MODULE_VERSION 115) and cannot load in Node.js ${process.versions.node}`);
    expect(stderr).toContain("Reinstall paperclip-sandbox-native-linux-x64-gnu@0.1.0");
  });

  it("loads the binary beside the package in a checkout", async () => {
    const { code, stdout, stderr } = await node(["--input-type=module", "-e", `(async () => {\n${LOAD_AND_CALL}\n})()${REPORT_FAILURE}`]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(stdout)).toEqual({ status: "ok", loaded: [path.join(repoRoot, BINARY)] });
  });

  it("loads the file NAPI_RS_NATIVE_LIBRARY_PATH names, and nothing else", async () => {
    const copy = path.join(work, "override", "addon.node");
    await mkdir(path.dirname(copy), { recursive: true });
    await copyFile(path.join(repoRoot, BINARY), copy);
    const { code, stdout, stderr } = await node(["--input-type=module", "-e", `(async () => {\n${LOAD_AND_CALL}\n})()${REPORT_FAILURE}`], {
      NAPI_RS_NATIVE_LIBRARY_PATH: copy,
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(stdout)).toEqual({ status: "ok", loaded: [copy] });
    // An override that does not load is the failure: the binary beside the package is not tried.
    const missing = await node(["--input-type=module", "-e", `(async () => {\n${LOAD_AND_CALL}\n})()${REPORT_FAILURE}`], {
      NAPI_RS_NATIVE_LIBRARY_PATH: path.join(work, "override", "absent.node"),
    });
    expect(missing.code).toBe(3);
    const absent = path.join(work, "override", "absent.node");
    expect(missing.stderr).toContain(
      `paperclip-sandbox-native: NAPI_RS_NATIVE_LIBRARY_PATH names ${absent}, which does not load in Node.js ${process.versions.node} (ABI ${process.versions.modules}, N-API ${process.versions.napi}) (Cannot find module '${absent}'). It must be a .node file`,
    );
    expect(missing.stderr).not.toContain("should carry it");
    // A symbolic link to the built `.so` resolves to that name, which Node.js loads as JavaScript.
    const linked = path.join(work, "override", "linked.node");
    await symlink(path.join(work, "override", "addon.so"), linked);
    await copyFile(path.join(repoRoot, BINARY), path.join(work, "override", "addon.so"));
    const viaLink = await node(["--input-type=module", "-e", `(async () => {\n${LOAD_AND_CALL}\n})()${REPORT_FAILURE}`], {
      NAPI_RS_NATIVE_LIBRARY_PATH: linked,
    });
    expect(viaLink.code).toBe(3);
    expect(viaLink.stderr).toContain(`NAPI_RS_NATIVE_LIBRARY_PATH names ${linked}, which does not load`);
    expect(viaLink.stderr).toContain("copy a built .so rather than linking it");
  });

  it("loads the platform package when no binary is beside the package", async () => {
    const app = await installedLayout(work, "installed", { platformPackage: true });
    const { code, stdout, stderr } = await node(["--input-type=module", "-e", `(async () => {\n${LOAD_AND_CALL}\n})()${REPORT_FAILURE}`], {}, app);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(stdout)).toEqual({ status: "ok", loaded: [path.join(app, `node_modules/paperclip-sandbox-native-${PLATFORM}`, BINARY)] });
    // The package's own loader, imported beside plugin-kit, gets the same exports.
    const same = await node(
      ["--input-type=module", "-e", 'const kit = await import("paperclip-sandbox-native/plugin-kit"); const own = await import("paperclip-sandbox-native"); console.log((await kit.loadNative()).NativeProvider === own.NativeProvider);'],
      {},
      app,
    );
    expect(same).toEqual({ code: 0, stdout: "true\n", stderr: "" });
  });

  it("without a binary anywhere, names the platform and the package that should carry it", async () => {
    const app = await installedLayout(work, "no-binary", { platformPackage: false });
    const { code, stderr } = await node(["--input-type=module", "-e", `(async () => {\n${LOAD_AND_CALL}\n})()${REPORT_FAILURE}`], {}, app);
    expect(code).toBe(3);
    expect(stderr).toContain(
      `paperclip-sandbox-native: no native binary for this platform (${PLATFORM}, Node.js ${process.versions.node} (ABI ${process.versions.modules}, N-API ${process.versions.napi})): the package paperclip-sandbox-native-${PLATFORM}@0.1.0, an optional dependency of paperclip-sandbox-native, should carry it and is not installed`,
    );
    // The failed attempts stay the cause, the last one (the platform package) outermost.
    expect(stderr).toContain(`Cannot find module 'paperclip-sandbox-native-${PLATFORM}'`);
  });

  it("names a plugin's native dependency of another version", async () => {
    const plugin = path.join(work, "plugin-kubernetes");
    await cp(path.join(repoRoot, "plugins/kubernetes/dist"), path.join(plugin, "dist"), { recursive: true });
    const json = JSON.parse(await readFile(path.join(repoRoot, "plugins/kubernetes/package.json"), "utf8"));
    json.dependencies["paperclip-sandbox-native"] = "0.0.9";
    await writeFile(path.join(plugin, "package.json"), JSON.stringify(json));
    await mkdir(path.join(plugin, "node_modules/@paperclipai"), { recursive: true });
    await symlink(repoRoot, path.join(plugin, "node_modules/paperclip-sandbox-native"));
    await symlink(path.join(repoRoot, "node_modules/@paperclipai/plugin-sdk"), path.join(plugin, "node_modules/@paperclipai/plugin-sdk"));
    const { code, stderr } = await node([path.join(plugin, "dist/worker.js")]);
    expect(code).not.toBe(0);
    expect(stderr).toContain(
      `@paperclipai/plugin-kubernetes ${json.version} needs paperclip-sandbox-native 0.0.9 exactly, but ${repoRoot} is 0.1.0.`,
    );
  });
});
