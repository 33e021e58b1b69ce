// Preloaded into a profiled worker (`--expose-gc --import`): on SIGUSR2, collect garbage and
// print one line with the worker's memory to stderr (never stdout: that is the protocol).
// HEAP_GC=0 prints the memory as it is, garbage included (what the next run starts with).
import v8 from "node:v8";

const collect = process.env.HEAP_GC !== "0";
process.on("SIGUSR2", () => {
  if (collect) globalThis.gc?.();
  const m = process.memoryUsage();
  const mib = (v) => (v / 2 ** 20).toFixed(1);
  const spaces = collect
    ? ""
    : v8
        .getHeapSpaceStatistics()
        .map((s) => ` ${s.space_name.replace(/_space$/, "")}=${mib(s.space_used_size)}`)
        .join("");
  process.stderr.write(
    `HEAP rss=${mib(m.rss)} heapTotal=${mib(m.heapTotal)} heapUsed=${mib(m.heapUsed)} external=${mib(m.external)} arrayBuffers=${mib(m.arrayBuffers)}${spaces}\n`,
  );
});
