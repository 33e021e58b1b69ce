// Preloaded into a profiled worker (`--expose-gc --import`): on SIGUSR2, collect garbage and
// print one line with the worker's memory to stderr (never stdout: that is the protocol).
process.on("SIGUSR2", () => {
  globalThis.gc?.();
  const m = process.memoryUsage();
  const mib = (v) => (v / 2 ** 20).toFixed(1);
  process.stderr.write(`HEAP rss=${mib(m.rss)} heapTotal=${mib(m.heapTotal)} heapUsed=${mib(m.heapUsed)} external=${mib(m.external)}\n`);
});
