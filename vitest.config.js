import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["__test__/**/*.spec.js"],
    // Native addons belong in child processes, not worker threads.
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
