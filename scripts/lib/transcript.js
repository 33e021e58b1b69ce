// A readable transcript of a lifecycle run: one progress line per step with the time it took.

import { performance } from "node:perf_hooks";

export class Transcript {
  failures = 0;

  section(title) {
    console.log(`\n${title}`);
  }

  /** Runs `work`, prints `✓ label (ms)` or `✗ label: message`, and returns its result. */
  async step(label, work, describe = () => undefined) {
    const started = performance.now();
    try {
      const result = await work();
      const ms = (performance.now() - started).toFixed(0);
      const detail = describe(result);
      console.log(`  ✓ ${label} (${ms} ms)${detail ? `  ${detail}` : ""}`);
      return result;
    } catch (error) {
      this.failures += 1;
      console.log(`  ✗ ${label}: ${error.message}`);
      throw error;
    }
  }

  note(text) {
    console.log(`      ${text}`);
  }
}
