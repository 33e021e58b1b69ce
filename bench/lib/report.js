// The Markdown report (bench/results/latest.md): machine line, commands, the main table of
// the performance figures, then one section per figure group (streaming sources, CPU per MiB, sync,
// event-loop stall, memory growth), targets and notes.

import { MiB } from "./common.js";
import { ADDON_LOAD_TARGET } from "./targets.js";

function fmt(s, digits = 0) {
  if (!s || !Number.isFinite(s.median)) return "-";
  const f = (v) => v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
  return s.min === s.max ? f(s.median) : `${f(s.median)} (${f(s.min)}-${f(s.max)})`;
}

function num(v, digits = 0) {
  return Number.isFinite(v) ? v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "-";
}

function ratio(a, b) {
  if (!a || !b || !Number.isFinite(a.median) || !Number.isFinite(b.median) || b.median === 0) return null;
  return a.median / b.median;
}
const fmtRatio = (r) => (r === null ? "-" : `${r.toFixed(2)}x`);

export function markdown(r, options) {
  const STREAMS = options.streams;
  const VALIDATE_CALLS = options.validateCalls;
  const f = r.figures;
  const m = r.machine;
  const lines = [];
  lines.push(`# Benchmark results${r.quick ? " (--quick smoke run: NOT representative)" : ""}`);
  lines.push("");
  lines.push(
    `Machine: nproc ${m.nproc}, ${m.memoryGiB} GiB RAM, ${m.cpuModel}, Node ${m.node}, Linux ${m.kernel}, load average at start ${m.loadavg.join(" / ")}.`,
  );
  if (m.addon) lines.push(`Addon: \`${m.addon.path}\`, ${(m.addon.bytes / MiB).toFixed(1)} MiB, built ${m.addon.mtime} (${m.addon.build}).`);
  lines.push(`Run: ${r.startedAt} -> ${r.finishedAt}; ${r.runs} runs per figure unless noted; cells are median (min-max).`);
  const kept = Object.entries(r.groups ?? {}).filter(([, g]) => g.keptFromPreviousRun);
  if (r.only) {
    lines.push(
      `This run reran only: ${r.only.join(", ")}.${kept.length ? ` Kept from the previous run: ${kept.map(([name, g]) => `${name} (${g.startedAt})`).join(", ")}.` : ""}`,
    );
  }
  lines.push("");
  lines.push("Commands:");
  lines.push("");
  lines.push("```sh");
  const override = r.machine.addonOverride;
  if (override) {
    lines.push("# release addon built aside (the tree's own .node may be another engineer's debug build):");
    lines.push("cargo build --release --lib -p paperclip-sandbox-native --target x86_64-unknown-linux-gnu");
    lines.push(`cp target/x86_64-unknown-linux-gnu/release/libpaperclip_sandbox_native.so ${override}`);
  } else {
    lines.push("PATH=$PWD/node_modules/.bin:$PATH npm run build             # release addon (napi build --platform --release --esm)");
  }
  lines.push("PATH=$PWD/node_modules/.bin:$PATH npm run build:emulators   # cargo build --release -p emulator --bins");
  lines.push(
    `${override ? `NAPI_RS_NATIVE_LIBRARY_PATH=${override.startsWith("/") ? "" : "$PWD/"}${override} ` : ""}PATH=$PWD/node_modules/.bin:$PATH npm run bench${r.quick || r.only ? ` --${r.quick ? " --quick" : ""}${r.only ? ` --only ${r.only.join(",")}` : ""}` : ""}   # node bench/run.js`,
  );
  lines.push("```");
  lines.push("");
  // Rows whose four cells are all empty (a group not run) are left out.
  const rows = [];
  const row = (name, pick, digits, { floors = true, ratios: withRatios = true } = {}) => {
    const [b, s, c, k] = ["bare", "sdk", "createos", "kubernetes"].map(pick);
    const cells = [fmt(b, digits), fmt(s, digits), fmt(c, digits), fmt(k, digits)];
    if (cells.every((cell) => cell === "-")) return;
    const ratios = withRatios ? [ratio(c, s), ratio(k, s), floors ? ratio(c, b) : null, floors ? ratio(k, b) : null] : [null, null, null, null];
    rows.push(`| ${name} | ${cells.join(" | ")} | ${ratios.map(fmtRatio).join(" | ")} |`);
  };
  const single = (v) => (Number.isFinite(v) ? { median: v, min: v, max: v } : undefined);
  row("fork -> `initialize` reply (ms)", (w) => f[`coldStart.${w}`]?.initMs, 0);
  row("worker RSS after initialize (MiB)", (w) => f[`coldStart.${w}`]?.rssMiB, 0);
  row("sequential `environmentValidateConfig` over stdio (calls/s)", (w) => f[`validate.${w}`]?.callsPerSec, 0);
  row("worker CPU per validate call (us)", (w) => f[`validate.${w}`]?.cpuUsPerCall, 1);
  // The floor sent the Kubernetes request (its kubeconfig parsed and echoed by the SDK), beside
  // the Kubernetes worker: the ratio a Kubernetes target is judged by.
  const k8sFloor = (pick) => (w) => (w === "sdk" ? pick("sdkKubernetes") : w === "kubernetes" ? pick("kubernetes") : undefined);
  row("  the same request as Kubernetes: calls/s (SDK-only column: the floor sent the Kubernetes request)", k8sFloor((w) => f[`validate.${w}`]?.callsPerSec), 0, { floors: false });
  row("  the same request as Kubernetes: worker CPU per call (us)", k8sFloor((w) => f[`validate.${w}`]?.cpuUsPerCall), 1, { floors: false });
  row("worker CPU per `health` call over stdio (us; a hook call's fixed cost)", (w) => f[`health.${w}`]?.cpuUsPerCall, 1);
  for (const stream of STREAMS) {
    row(`execute, ${stream.label}, delivered as \`execute.log\` (MiB/s)`, (w) => f[`stream.${stream.key}.${w}`]?.mibPerSec, 1, { floors: false });
    row(`  peak worker RSS during it (MiB)`, (w) => f[`stream.${stream.key}.${w}`]?.peakRssMiB, 0, { floors: false });
    row(`  worker RSS when the run starts (MiB)`, (w) => f[`stream.${stream.key}.${w}`]?.rssBeforeMiB, 0, { floors: false });
    row(`  \`execute.log\` notifications per run`, (w) => f[`stream.${stream.key}.${w}`]?.framesPerRun, 0, { floors: false });
    row(`  time to the first stdout chunk (ms; request sent -> first \`execute.log\`)`, (w) => f[`stream.${stream.key}.${w}`]?.firstChunkMs, 1, { floors: false });
  }
  row("CreateOS acquire (ms; pacer-bound: requests to one origin >= 300 ms apart)", (w) => (w === "createos" ? f[`acquire.${w}`]?.ms : undefined), 0, { floors: false });
  row("  API requests per acquire (emulator request log)", (w) => (w === "createos" ? f[`acquire.${w}`]?.apiRequests : undefined), 0, { floors: false });
  const tree = f["sync.floor"]?.tree ?? f["sync.in.createos"]?.tree ?? f["sync.in.kubernetes"]?.tree;
  const treeLabel = tree ? `${(tree.bytes / MiB).toFixed(0)} MiB / ${tree.files.toLocaleString("en-US")} files` : "workspace tree";
  // The sync floor (a local tar pipe) sits in the SDK-only column so the ratio columns read "x floor".
  row(`\`environmentSyncIn\`, ${treeLabel} (MiB/s; SDK-only column: local \`tar c \\| tar x\` floor)`, (w) => (w === "sdk" ? f["sync.floor"]?.mibPerSec : f[`sync.in.${w}`]?.mibPerSec), 1, { floors: false });
  row(`\`environmentSyncOut\`, ${treeLabel} (MiB/s; SDK-only column: same floor)`, (w) => (w === "sdk" ? f["sync.floor"]?.mibPerSec : f[`sync.out.${w}`]?.mibPerSec), 1, { floors: false });
  // Absolute figures: a ratio to the floor would only restate the floor's tiny numbers.
  row("worst worker event-loop stall while executes on many leases are in flight (ms, per-run max; target <= 20; see the stall table)", (w) => f[`stall.${w}`]?.stallMaxMs, 1, { ratios: false });
  row("  wall time of the burst (ms)", (w) => f[`stall.${w}`]?.wallMs, 0, { ratios: false });
  const calls = Object.values(f).find((x) => x?.calls?.measured)?.calls?.measured;
  row(`worker RSS growth over ${calls ? calls.toLocaleString("en-US") : "10,000"} hook calls (MiB, after GC)`, (w) => single(f[`memory.${w}`]?.growthMiB), 1, { ratios: false });
  row(`  per 1,000 calls (KiB)`, (w) => single(f[`memory.${w}`]?.kibPer1000Calls), 0, { ratios: false });
  if (rows.length) {
    lines.push("| figure | bare protocol worker (no SDK) | SDK-only worker | native CreateOS | native Kubernetes | CreateOS / SDK-only | Kubernetes / SDK-only | CreateOS / bare | Kubernetes / bare |");
    lines.push("|---|---|---|---|---|---|---|---|---|");
    lines.push(...rows);
  }
  lines.push("");
  addonLoadSection(lines, f);
  if (Object.keys(f).some((k) => k.startsWith("stream."))) streamSections(lines, f, STREAMS);
  syncSection(lines, f);
  stallSection(lines, f);
  memorySection(lines, f);
  lines.push("");
  lines.push("Targets:");
  lines.push("");
  for (const t of r.targets) {
    const v = t.value === null ? "n/a" : t.value < 10 ? t.value.toFixed(2) : t.value.toFixed(0);
    lines.push(`- ${t.met === null ? "n/a " : t.met ? "met " : "MISSED "} ${t.name}: ${v} (${t.detail})`);
  }
  lines.push("");
  lines.push("Notes:");
  lines.push("");
  lines.push(
    "- Streams are `head -c N /dev/zero | tr '\\0' a | dd bs=CHUNK iflag=fullblock` inside the sandbox (the emulator runs it under bubblewrap); MiB/s is stdout bytes received as `execute.log` notifications divided by the time from sending `environmentExecute` to its reply. The SDK-only floor emits the same sizes synthetically from its execute hook (honouring stdout backpressure).",
  );
  lines.push("- Peak RSS: VmHWM after resetting it (`/proc/<pid>/clear_refs` = 5) before each run, and VmRSS sampled every 20 ms.");
  const clock = f["validate.sdk"]?.cpuClock ?? f["health.sdk"]?.cpuClock;
  lines.push(
    clock === "ticks"
      ? `- CPU per call: \`/proc/<pid>/stat\` utime+stime delta (10 ms ticks) over ${VALIDATE_CALLS} calls per run.`
      : `- CPU per call (validate, health): the scheduler's runtime of all the worker's threads (\`se.sum_exec_runtime\` in \`/proc/<pid>/task/*/sched\`, ns) over ${VALIDATE_CALLS} calls per run; elsewhere utime+stime in 10 ms ticks.`,
  );
  lines.push(
    "- Validate floors: the SDK-only worker answers validate with `{ok: true, normalizedConfig: <the config sent>}` (the contract's reply at its least), and is run once with the CreateOS request (its column) and once with the Kubernetes request (the `the same request as Kubernetes` rows), which the Kubernetes targets use.",
  );
  lines.push("- Cold start and validate: the four workers take turns run by run (validate, then health: all four up at once, 300 warm-up calls of each), so load from elsewhere hits them alike.");
  notesSection(lines, r);
  lines.push("- Numbers on a shared VM drift 30-50 % between runs: compare ratios within one run.");
  return `${lines.join("\n")}\n`;
}

/**
 * The addon's own share of a cold start (bench/lib/addon-load.js): import of the native package
 * to both providers constructed, timed inside a fresh process, the VmRSS it added, and the same
 * window in callgrind instructions; beside the SDK-only floor's whole fork -> `initialize`.
 */
function addonLoadSection(lines, f) {
  const a = f["coldStart.addon"];
  if (!a) return;
  const floor = f["coldStart.sdk"];
  const share = (v, of) => (Number.isFinite(v) && Number.isFinite(of) && of > 0 ? `${((100 * v) / of).toFixed(1)} %` : "-");
  const vsTarget = (v, target) => (Number.isFinite(v) ? `${(v / target).toFixed(2)}x (${v <= target ? "met" : "MISSED"})` : "-");
  lines.push("");
  lines.push(
    `The addon's own share of a cold start (\`bench/lib/addon-load.js\`, a fresh Node process per run, the SDK imported first as the workers do): from the import of the native package (plugin-kit, its loader, dlopen, module registration) to both providers constructed with their host bridges. Targets: <= ${ADDON_LOAD_TARGET.ms} ms and <= ${ADDON_LOAD_TARGET.rssMiB} MiB of RSS; the floor is the SDK-only worker's whole fork -> \`initialize\` in this run.`,
  );
  lines.push("");
  lines.push("| figure | value | vs target | share of the SDK-only floor |");
  lines.push("|---|---|---|---|");
  lines.push(`| import -> both providers constructed (ms) | ${fmt(a.ms, 2)} | ${vsTarget(a.ms?.median, ADDON_LOAD_TARGET.ms)} | ${share(a.ms?.median, floor?.initMs?.median)} of ${fmt(floor?.initMs, 0)} ms |`);
  lines.push(`|   of which plugin-kit / loader + dlopen + registration / two constructors (ms) | ${fmt(a.pluginKitMs, 2)} / ${fmt(a.addonImportMs, 2)} / ${fmt(a.constructMs, 2)} | | |`);
  lines.push(`| VmRSS added (MiB) | ${fmt(a.rssMiB, 2)} | ${vsTarget(a.rssMiB?.median, ADDON_LOAD_TARGET.rssMiB)} | ${share(a.rssMiB?.median, floor?.rssMiB?.median)} of ${fmt(floor?.rssMiB, 0)} MiB |`);
  lines.push(`|   of which anonymous / file-backed (MiB) | ${fmt(a.anonMiB, 2)} / ${fmt(a.fileMiB, 2)} | | |`);
  const ir = a.instructions;
  lines.push(
    `| instructions, same window, synchronous load (callgrind) | ${ir ? fmt(ir, 0) : "not measured"} | | ${ir && Number.isFinite(a.windowInstructions) ? `window alone: ${num(a.windowInstructions)}` : ""} |`,
  );
}

const WORKER_NAMES = { bare: "bare protocol worker (no SDK)", sdk: "SDK-only worker", createos: "native CreateOS", kubernetes: "native Kubernetes" };

/** Sync in / out of the generated workspace tree, next to a local `tar c | tar x` pipe. */
function syncSection(lines, f) {
  const floor = f["sync.floor"];
  const providers = ["createos", "kubernetes"].filter((p) => f[`sync.in.${p}`] || f[`sync.out.${p}`] || f[`sync.check.${p}`]);
  if (!floor && providers.length === 0) return;
  const tree = floor?.tree ?? f[`sync.in.${providers[0]}`]?.tree;
  lines.push("");
  lines.push(
    `Workspace sync through the plugin workers (\`environmentSyncIn\` / \`environmentSyncOut\`, one directory mapping): ${tree ? `${num(tree.files)} files in ${num(tree.dirs)} directories, ${num(tree.bytes / MiB, 0)} MiB of file content` : "the generated tree"}; MiB/s of file content (not archive bytes) per call, request sent -> reply received. Floor: \`tar c | tar x\` of the same tree on this machine.`,
  );
  lines.push("");
  lines.push("| direction | floor: local `tar c \\| tar x` (MiB/s) | native CreateOS (MiB/s) | native Kubernetes (MiB/s) | CreateOS / floor | Kubernetes / floor | round-trip check (files, bytes) |");
  lines.push("|---|---|---|---|---|---|---|");
  const check = (p) => {
    const c = f[`sync.check.${p}`];
    if (!c) return "-";
    return `${p}: ${c.ok ? "ok" : "MISMATCH"} (${num(c.files)} / ${num(c.bytes)})`;
  };
  for (const dir of ["in", "out"]) {
    const [c, k] = ["createos", "kubernetes"].map((p) => f[`sync.${dir}.${p}`]?.mibPerSec);
    lines.push(
      `| sync ${dir} | ${fmt(floor?.mibPerSec, 1)} | ${fmt(c, 1)} | ${fmt(k, 1)} | ${fmtRatio(ratio(c, floor?.mibPerSec))} | ${fmtRatio(ratio(k, floor?.mibPerSec))} | ${dir === "in" ? providers.map(check).join("; ") : ""} |`,
    );
  }
  const extra = [];
  for (const p of providers) {
    for (const dir of ["in", "out"]) {
      const x = f[`sync.${dir}.${p}`];
      if (x) extra.push(`${WORKER_NAMES[p]} sync ${dir}: ${x.runs} runs, ${fmt(x.ms, 0)} ms per call, archive ${num(x.archiveBytes / MiB, 1)} MiB, peak worker RSS ${fmt(x.peakRssMiB, 0)} MiB`);
    }
  }
  if (floor) extra.push(`floor: ${floor.runs} runs, ${fmt(floor.ms, 0)} ms per pipe`);
  if (extra.length) {
    lines.push("");
    for (const e of extra) lines.push(`- ${e}`);
  }
}

/** The worst event-loop stall inside each worker while 200 executes are in flight. */
function stallSection(lines, f) {
  const keys = ["sdk", "createos", "kubernetes"].filter((k) => f[`stall.${k}`]);
  if (keys.length === 0) return;
  lines.push("");
  lines.push(
    "Event-loop stall inside the worker while executes are in flight at once (measured by a preload in the worker; target: no stall > 20 ms). Stall = `monitorEventLoopDelay` max (p99) minus its 2 ms resolution, over the whole burst:",
  );
  lines.push("");
  lines.push("| worker | executes in flight / leases | runs | worst stall (ms) | p99 stall (ms) | worst stall ended at (ms after the first request) | wall time of the burst (ms) | acquire of all leases (ms) |");
  lines.push("|---|---|---|---|---|---|---|---|");
  for (const k of keys) {
    const s = f[`stall.${k}`];
    const leases = s.leases ? `${s.executes} / ${s.leases}` : `${s.executes} / - (synthetic)`;
    lines.push(`| ${WORKER_NAMES[k]} | ${leases} | ${s.runs} | ${fmt(s.stallMaxMs, 1)} | ${fmt(s.stallP99Ms, 1)} | ${fmt(s.worstAtMs, 0)} | ${fmt(s.wallMs, 0)} | ${s.acquireAllMs ? num(s.acquireAllMs, 0) : "-"} |`);
  }
}

/** RSS growth over many hook calls. */
function memorySection(lines, f) {
  const keys = ["bare", "sdk", "createos", "kubernetes"].filter((k) => f[`memory.${k}`]);
  if (keys.length === 0) return;
  const calls = f[`memory.${keys[0]}`].calls;
  lines.push("");
  lines.push(
    `Memory growth over ${num(calls.measured)} hook calls after ${num(calls.warmup)} warm-up calls (one run per worker; RSS and V8 heap sampled by the probe preload right after a forced full GC, \`--expose-gc\` given to the bench's worker only):`,
  );
  lines.push("");
  lines.push("| worker | call mix | RSS after warm-up (MiB) | RSS after the calls (MiB) | RSS growth (MiB) | RSS growth per 1,000 calls (KiB) | second half only, per 1,000 calls (KiB) | heap used growth (MiB) | RSS growth without GC, /proc VmRSS (MiB) |");
  lines.push("|---|---|---|---|---|---|---|---|---|");
  for (const k of keys) {
    const m = f[`memory.${k}`];
    lines.push(
      `| ${WORKER_NAMES[k]} | ${m.mix} | ${num(m.rssWarmMiB, 1)} | ${num(m.rssEndMiB, 1)} | ${num(m.growthMiB, 1)} | ${num(m.kibPer1000Calls, 0)} | ${num(m.secondHalfKibPer1000Calls, 0)} | ${num(m.heapGrowthMiB, 1)} | ${num(m.procRssGrowthMiB, 1)} |`,
    );
  }
}

/** Notes, grouped by the figure group that wrote them. */
function notesSection(lines, r) {
  for (const [name, group] of Object.entries(r.groups ?? {})) {
    for (const note of group.notes ?? []) lines.push(`- [${name}] ${note}`);
  }
  const grouped = new Set(Object.values(r.groups ?? {}).flatMap((g) => g.notes ?? []));
  for (const note of r.notes ?? []) if (!grouped.has(note)) lines.push(`- ${note}`);
}

/** Streaming: CreateOS sources (frame server / emulator, each also alone) and CPU per MiB. */
function streamSections(lines, f, STREAMS) {
  lines.push(
    "CreateOS streaming sources. The main table's CreateOS column streams from the frame server (bench/lib/frame-server.js: exact frame sizes, no command). Below, the same worker against the CreateOS emulator running the real command (which frames output in <= 16 KiB pieces), and each server alone, read by a raw HTTP client that parses every NDJSON frame (the ceiling):",
  );
  lines.push("");
  lines.push("| stream | source | server alone (MiB/s) | native CreateOS (MiB/s) | CreateOS / server alone | CreateOS peak RSS (MiB) | frames per run (server alone / via worker) |");
  lines.push("|---|---|---|---|---|---|---|");
  for (const stream of STREAMS) {
    for (const [src, raw, name] of [["createos", "frameServer", "frame server"], ["createosEmu", "emulator", "CreateOS emulator"]]) {
      const c = f[`stream.${stream.key}.${src}`];
      const e = f[`stream.${stream.key}.${raw}`];
      lines.push(
        `| ${stream.label} | ${name} | ${fmt(e?.mibPerSec, 1)} | ${fmt(c?.mibPerSec, 1)} | ${fmtRatio(ratio(c?.mibPerSec, e?.mibPerSec))} | ${fmt(c?.peakRssMiB, 0)} | ${fmt(e?.framesPerRun, 0)} / ${fmt(c?.framesPerRun, 0)} |`,
      );
    }
  }
  lines.push("");
  lines.push(
    "Where the CPU goes while streaming (CPU ms per MiB delivered, median; worker = the forked plugin worker, server = the emulator or frame server process itself (not the sandboxed command), host = this bench process reading the worker's stdout):",
  );
  lines.push("");
  lines.push("| stream | path | worker | server | host |");
  lines.push("|---|---|---|---|---|");
  for (const stream of STREAMS) {
    for (const [key, name] of [["sdk", "SDK-only floor"], ["createos", "native CreateOS via frame server"], ["createosEmu", "native CreateOS via emulator"], ["kubernetes", "native Kubernetes via emulator"]]) {
      const x = f[`stream.${stream.key}.${key}`];
      if (!x) continue;
      lines.push(`| ${stream.label} | ${name} | ${fmt(x.workerCpuMsPerMiB, 1)} | ${fmt(x.serverCpuMsPerMiB, 1)} | ${fmt(x.hostCpuMsPerMiB, 1)} |`);
    }
  }
  lines.push("");
}
