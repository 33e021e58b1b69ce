import { createTestHarness } from "@paperclipai/plugin-sdk/testing";

import createosPlugin, { manifest as createosManifest } from "../plugins/createos/dist/index.js";
import kubernetesPlugin, { manifest as kubernetesManifest } from "../plugins/kubernetes/dist/index.js";

describe.each([
  ["createos", createosPlugin, createosManifest, { shape: "s-1vcpu-1gb" }, "CreateOS requires an API URL."],
  ["kubernetes", kubernetesPlugin, kubernetesManifest, { inCluster: "yes" }, "Expected boolean, received string"],
])("%s plugin under Jest", (driverKey, plugin, manifest, badConfig, message) => {
  beforeAll(async () => {
    await plugin.definition.setup(createTestHarness({ manifest }).ctx);
  });

  test("health comes from the native addon", async () => {
    const health = await plugin.definition.onHealth();
    expect(health.status).toBe("ok");
  });

  test("config validation reports the original message", async () => {
    const result = await plugin.definition.onEnvironmentValidateConfig({ driverKey, config: badConfig });
    expect(result).toEqual({ ok: false, errors: [message] });
  });
});
