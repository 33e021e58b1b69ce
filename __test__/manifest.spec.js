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

/**
 * What this implementation changes in a recorded manifest's config schema, each listed with its
 * reason in docs/wire-parity.md: properties it adds (which must carry a description, so the
 * host's form explains them) and properties whose description it rewrites. Everything else
 * must equal the recording byte for byte.
 */
const CONFIG_SCHEMA_CHANGES = {
  createos: { added: [], described: [] },
  kubernetes: {
    // Issue #37: the operator's image overrides, declared so the host's form shows them.
    // Issue #37: how long the ready-wait lets a pod stay unschedulable.
    added: ["runtimeImages", "unschedulableGraceSec"],
    // Issue #37: the accepted forms (a bare host/path; a scheme is dropped).
    described: ["imageRegistry"],
  },
};

/** The manifest with this implementation's config-schema changes taken back out. */
function withoutConfigSchemaChanges(dir, manifest) {
  const { added, described } = CONFIG_SCHEMA_CHANGES[dir];
  const copy = structuredClone(manifest);
  for (const driver of copy.environmentDrivers ?? []) {
    const properties = driver.configSchema?.properties ?? {};
    for (const key of added) delete properties[key];
    for (const key of described) delete properties[key]?.description;
  }
  return copy;
}

describe.each(plugins)("$packageName manifest", ({ dir, packageName, id, driverKey }) => {
  const packageRoot = path.join(repoRoot, "plugins", dir);

  it("is found where the host looks for it and equals the original byte for byte", async () => {
    const packageJson = JSON.parse(await readFile(path.join(packageRoot, "package.json"), "utf8"));
    expect(packageJson.name).toBe(packageName);
    expect(packageJson.type).toBe("module");
    expect(packageJson.paperclipPlugin).toEqual({ manifest: "./dist/manifest.js", worker: "./dist/worker.js" });

    const manifest = (await import(path.join(packageRoot, "dist/manifest.js"))).default;
    const [golden] = loadCases(`${dir}/manifest.json`);
    const recorded = withoutConfigSchemaChanges(dir, golden.expected.returns);
    expect(JSON.stringify(withoutConfigSchemaChanges(dir, manifest))).toBe(JSON.stringify(recorded));
    expect(manifest.id).toBe(id);
    expect(manifest.environmentDrivers.map((d) => [d.driverKey, d.kind])).toEqual([[driverKey, "sandbox_provider"]]);
    expect(manifest.entrypoints.worker).toBe("./dist/worker.js");
  });

  it("declares each added config property with a description, and rewrites only the listed descriptions", async () => {
    const manifest = (await import(path.join(packageRoot, "dist/manifest.js"))).default;
    const [golden] = loadCases(`${dir}/manifest.json`);
    const { added, described } = CONFIG_SCHEMA_CHANGES[dir];
    const properties = manifest.environmentDrivers[0].configSchema.properties;
    const recorded = golden.expected.returns.environmentDrivers[0].configSchema.properties;
    for (const key of added) {
      expect(recorded[key], key).toBeUndefined();
      expect(properties[key]?.description, key).toMatch(/\S/);
    }
    for (const key of described) {
      expect(properties[key].description, key).not.toBe(recorded[key].description);
    }
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
