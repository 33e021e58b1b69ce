// The README's configuration reference is generated from the manifests' config schemas
// (scripts/gen-config-reference.js); this fails when it is stale. Fix: `npm run docs:config`.

import { readFile } from "node:fs/promises";

import { describe, expect, it } from "vitest";

import { README, renderConfigReference, replaceSection } from "../scripts/gen-config-reference.js";

describe("README configuration reference", () => {
  it("matches the manifests' config schemas (run `npm run docs:config` to regenerate)", async () => {
    const readme = await readFile(README, "utf8");
    const reference = await renderConfigReference();
    expect(replaceSection(readme, reference), "README.md's configuration reference is stale: run `npm run docs:config`").toBe(readme);
  });

  it("documents every field of both providers", async () => {
    const reference = await renderConfigReference();
    for (const dir of ["createos", "kubernetes"]) {
      const manifest = (await import(`../plugins/${dir}/dist/manifest.js`)).default;
      for (const field of Object.keys(manifest.environmentDrivers[0].configSchema.properties)) {
        expect(reference).toContain(`| \`${field}\``);
      }
    }
  });
});
