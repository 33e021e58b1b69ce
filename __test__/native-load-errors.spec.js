// The errors a user meets when the native addon cannot serve a plugin: a binary built for another
// Node.js ABI, and a plugin whose paperclip-sandbox-native has another version than the one it
// pins. (No binary for this platform at all: __test__/install.spec.js, from a real install.)

import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { repoRoot } from "./support/paths.js";

const run = promisify(execFile);

/** Runs node on `args` to its end: {code, stderr}. */
function node(args, env = {}) {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { encoding: "utf8", env: { PATH: process.env.PATH, ...env } }, (error, _stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stderr });
    });
  });
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
