// A large ASCII result string is handed to V8 as an external string whose Rust buffer is freed
// when V8 collects it (src/bridge/outcome.rs). V8 only looks at its external-memory limit when that
// count changes, so the addon reports each buffer's size for as long as it lives: otherwise a
// series of large executes keeps every earlier result until something else starts a full GC.
// This holds a series' dead results near V8's bound (a full GC started once external memory has
// grown by 64 MiB), with nothing but the results allocating.

import { setImmediate as nextTurn } from "node:timers/promises";

import { describe, expect, it } from "vitest";

import * as native from "../index.js";

const MiB = 1024 * 1024;

describe("large execute results", () => {
  it("are collected as they die, not kept until some other full GC", async () => {
    const size = 8 * MiB;
    const runs = 32;
    const start = process.memoryUsage().external;
    let most = 0;
    for (let run = 0; run < runs; run++) {
      const outcome = native.debugLargeExecuteOutcome(size);
      // Read back whole, as the SDK's JSON.stringify of the reply does.
      expect(outcome.value.stdout.length).toBe(size);
      expect(outcome.value.stdout.at(-1)).toBe("a");
      most = Math.max(most, process.memoryUsage().external - start);
      // A turn of the event loop, where V8's GC tasks run.
      await nextTurn();
    }
    // Unreported, all 32 results (256 MiB) were still held at the end. Reported, V8 starts
    // marking at +64 MiB and steps it on every report past that: 56-80 MiB measured at most.
    expect(most).toBeGreaterThanOrEqual(size);
    expect(most).toBeLessThan(128 * MiB);
  });
});
