// The performance targets, evaluated on a run's figures. Reported, never enforced: a missed target
// is a finding, not a failure of the bench.

const ratio = (a, b) => (!a || !b || !Number.isFinite(a.median) || !Number.isFinite(b.median) || b.median === 0 ? null : a.median / b.median);

export const STALL_TARGET_MS = 20;
/** Issue #19: a hook call's worker CPU above the SDK-only floor's, per call. */
export const HOOK_CPU_ABOVE_FLOOR_US = 5;
/** Issue #19: streamed output rate as a share of the floor's, and peak RSS above the floor's. */
export const STREAM_RATE_OF_FLOOR = 0.8;
export const STREAM_RSS_ABOVE_FLOOR_MIB = 64;
/** The addon's own share of a cold start: import of the native package -> both providers constructed. */
export const ADDON_LOAD_TARGET = { ms: 5, rssMiB: 3 };

/** The validate floor a provider is judged by: the SDK-only worker sent that provider's request. */
function validateFloorKey(f, key) {
  return key === "kubernetes" && f["validate.sdkKubernetes"] ? "validate.sdkKubernetes" : "validate.sdk";
}

export function evaluateTargets(f) {
  const t = [];
  const check = (name, value, ok, detail) => t.push({ name, value, met: value === null ? null : ok, detail });
  const s64 = f["stream.64k.createos"];
  const s4 = f["stream.4k.createos"];
  check("CreateOS 64 MiB in 64 KiB frames >= 100 MiB/s (frame server)", s64?.mibPerSec.median ?? null, (s64?.mibPerSec.median ?? 0) >= 100, "median MiB/s");
  check("CreateOS 8 MiB in 4 KiB frames >= 30 MiB/s (frame server)", s4?.mibPerSec.median ?? null, (s4?.mibPerSec.median ?? 0) >= 30, "median MiB/s");
  const peaks = ["64k", "4k"].flatMap((k) => ["createos", "createosEmu"].map((src) => f[`stream.${k}.${src}`]?.peakRssMiB.max ?? NaN));
  const peak = Math.max(...peaks.filter(Number.isFinite));
  check("CreateOS streaming peak worker RSS <= 250 MiB", Number.isFinite(peak) ? peak : null, peak <= 250, "max over runs, MiB");
  for (const key of ["createos", "kubernetes"]) {
    const init = ratio(f[`coldStart.${key}`]?.initMs, f["coldStart.sdk"]?.initMs);
    check(`${key} cold start <= 1.1x SDK-only`, init, init !== null && init <= 1.1, "ratio of medians");
    const rss = ratio(f[`coldStart.${key}`]?.rssMiB, f["coldStart.sdk"]?.rssMiB);
    check(`${key} RSS after initialize <= 1.1x SDK-only`, rss, rss !== null && rss <= 1.1, "ratio of medians");
    const rate = ratio(f[`validate.${key}`]?.callsPerSec, f[validateFloorKey(f, key)]?.callsPerSec);
    check(`${key} validate calls/s >= 0.9x SDK-only`, rate, rate !== null && rate >= 0.9, "ratio of medians");
  }
  // Issue #19's targets, each against the SDK-only floor of the same run.
  for (const key of ["createos", "kubernetes"]) {
    const sdkCpu = (hook) => f[hook === "validate" ? validateFloorKey(f, key) : `${hook}.sdk`]?.cpuUsPerCall?.median;
    for (const hook of ["validate", "health"]) {
      const mine = f[`${hook}.${key}`]?.cpuUsPerCall?.median;
      const above = Number.isFinite(mine) && Number.isFinite(sdkCpu(hook)) ? mine - sdkCpu(hook) : null;
      const what = hook === "health" ? "health call (a hook's fixed cost)" : "validate call";
      check(`${key} worker CPU per ${what} <= SDK-only + ${HOOK_CPU_ABOVE_FLOOR_US} us`, above, above !== null && above <= HOOK_CPU_ABOVE_FLOOR_US, "difference of medians, us");
    }
    for (const frames of ["64k", "4k"]) {
      const mine = f[`stream.${frames}.${key}`];
      const floor = f[`stream.${frames}.sdk`];
      const rate = ratio(mine?.mibPerSec, floor?.mibPerSec);
      check(`${key} stream in ${frames === "64k" ? "64 KiB" : "4 KiB"} frames >= ${STREAM_RATE_OF_FLOOR}x SDK-only`, rate, rate !== null && rate >= STREAM_RATE_OF_FLOOR, "ratio of medians");
      const above = mine && floor ? mine.peakRssMiB.median - floor.peakRssMiB.median : NaN;
      check(`${key} stream in ${frames === "64k" ? "64 KiB" : "4 KiB"} frames: peak RSS <= SDK-only + ${STREAM_RSS_ABOVE_FLOOR_MIB} MiB`, Number.isFinite(above) ? above : null, above <= STREAM_RSS_ABOVE_FLOOR_MIB, "difference of median peaks, MiB");
    }
  }
  // Kubernetes returns its whole output: its peak for 64 MiB may exceed the floor's by 2x that.
  const k64 = f["stream.64k.kubernetes"];
  const f64 = f["stream.64k.sdk"];
  const k64Above = k64 && f64 ? k64.peakRssMiB.median - f64.peakRssMiB.median : NaN;
  check("kubernetes 64 MiB output: peak RSS <= SDK-only + 2 x 64 MiB", Number.isFinite(k64Above) ? k64Above : null, k64Above <= 128, "difference of median peaks, MiB");
  for (const direction of ["in", "out"]) {
    const rate = ratio(f[`sync.${direction}.kubernetes`]?.mibPerSec, f["sync.floor"]?.mibPerSec);
    check(`kubernetes sync ${direction} >= 1.0x local tar pipe`, rate, rate !== null && rate >= 1.0, "ratio of medians");
  }
  // The stall target is absolute (no event-loop stall > 20 ms in the worker while 200 executes
  // are in flight), judged on the worst run, not the median.
  for (const key of ["createos", "kubernetes"]) {
    const s = f[`stall.${key}`];
    const worst = s && Number.isFinite(s.stallMaxMs.max) ? s.stallMaxMs.max : null;
    check(
      `${key} worst worker event-loop stall <= ${STALL_TARGET_MS} ms, ${s?.executes ?? 200} concurrent executes on ${s?.leases ?? 50} leases`,
      worst,
      worst !== null && worst <= STALL_TARGET_MS,
      "max over runs, ms",
    );
  }
  const load = f["coldStart.addon"];
  const loadMs = load?.ms?.median ?? null;
  check(`addon load (import -> both providers constructed) <= ${ADDON_LOAD_TARGET.ms} ms`, loadMs, loadMs !== null && loadMs <= ADDON_LOAD_TARGET.ms, "median ms, in-process");
  const loadRss = load?.rssMiB?.median ?? null;
  check(`addon load adds <= ${ADDON_LOAD_TARGET.rssMiB} MiB of RSS`, loadRss, loadRss !== null && loadRss <= ADDON_LOAD_TARGET.rssMiB, "median VmRSS added, MiB");
  return t;
}
