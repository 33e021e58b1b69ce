// The host conformance suite (`npm run test:host`): the published Paperclip host's own modules
// drive both plugins with a real database. Kept apart from `vitest run` (vitest.config.js only
// includes __test__/): it needs the host installed outside the repo (scripts/host-install.js).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["__host__/**/*.spec.js"],
    // Native addons and the host's process-wide state (HOME, env, the event bus) belong in a
    // child process of their own; the steps of the file run in order and share one host.
    pool: "forks",
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 240_000,
  },
});
