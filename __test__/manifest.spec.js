// The manifests are the drop-in contract's first line: the host validates them with its own
// schema and keys plugins, leases and capabilities on their ids and driver keys.

import { readFile } from "node:fs/promises";
import path from "node:path";

import { pluginManifestV1Schema } from "@paperclipai/shared";
import { describe, expect, it } from "vitest";

import { loadCases } from "./support/golden.js";
import { repoRoot } from "./support/paths.js";

const plugins = [
  { dir: "createos", packageName: "@paperclipai/plugin-createos", id: "paperclip.createos-sandbox-provider", driverKey: "createos" },
  { dir: "kubernetes", packageName: "@paperclipai/plugin-kubernetes", id: "paperclip.kubernetes-sandbox-provider", driverKey: "kubernetes" },
];

describe.each(plugins)("$packageName manifest", ({ dir, packageName, id, driverKey }) => {
  const packageRoot = path.join(repoRoot, "plugins", dir);

  it("is found where the host looks for it and equals the original byte for byte", async () => {
    const packageJson = JSON.parse(await readFile(path.join(packageRoot, "package.json"), "utf8"));
    expect(packageJson.name).toBe(packageName);
    expect(packageJson.type).toBe("module");
    expect(packageJson.paperclipPlugin).toEqual({ manifest: "./dist/manifest.js", worker: "./dist/worker.js" });

    const manifest = (await import(path.join(packageRoot, "dist/manifest.js"))).default;
    const [golden] = loadCases(`${dir}/manifest.json`);
    expect(JSON.stringify(manifest)).toBe(JSON.stringify(golden.expected.returns));
    expect(manifest.id).toBe(id);
    expect(manifest.environmentDrivers.map((d) => [d.driverKey, d.kind])).toEqual([[driverKey, "sandbox_provider"]]);
    expect(manifest.entrypoints.worker).toBe("./dist/worker.js");
  });

  it("passes the host's own manifest schema", async () => {
    const manifest = (await import(path.join(packageRoot, "dist/manifest.js"))).default;
    const parsed = pluginManifestV1Schema.safeParse(manifest);
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(parsed.success).toBe(true);
  });

  it("is rejected by that schema when a declaration key is unknown (the schema is strict)", async () => {
    const manifest = structuredClone((await import(path.join(packageRoot, "dist/manifest.js"))).default);
    manifest.environmentDrivers[0].sandboxCapabilities = { notACapability: true };
    expect(pluginManifestV1Schema.safeParse(manifest).success).toBe(false);
  });
});
