#!/usr/bin/env node
// paperclip-sandbox: the operator's command line for the Paperclip CreateOS and Kubernetes
// sandbox providers. The error reference itself lives in Rust (crates/error-catalog); this file
// only parses arguments and prints.
//
// Exit codes: see USAGE (explain: 0 / 1 no catalogued error / 2 usage; check: 0 passed / 1 a
// step failed / 2 usage or config error / 130 interrupted).

import { readFileSync } from "node:fs";

const USAGE = `Usage: paperclip-sandbox <command> [options]

Commands:
  explain "MESSAGE"   Explain an error message of the CreateOS or Kubernetes provider: its
                      stable code, the hooks that raise it, what it means, common causes and
                      the fix. Quote the message; "-" (or no message with piped input) reads
                      it from stdin. --json prints the entry as JSON.
  check               Run a full lease lifecycle (validate, probe, acquire, realize, sync
                      in, execute, sync out, release) through the real plugin worker against
                      the environment a config names: --provider createos|kubernetes
                      --config FILE [--backend sandbox-cr|job] [--deep] [--emulator] [--json].
                      See paperclip-sandbox check --help.

Options:
  -h, --help          Show this help.

Exit codes: explain: 0 explained, 1 no catalogued error, 2 usage error.
            check: 0 every step passed, 1 a step failed, 2 usage or config error,
                   130 interrupted (after cleanup).
The full error reference is docs/errors.md.`;

const EXIT_OK = 0;
const EXIT_UNKNOWN = 1;
const EXIT_USAGE = 2;

function usageError(message) {
  process.stderr.write(`paperclip-sandbox: ${message}\n\n${USAGE}\n`);
  return EXIT_USAGE;
}

function width() {
  const columns = process.stdout.isTTY ? process.stdout.columns : 0;
  return Math.max(40, Math.min(columns || 100, 100));
}

/** Wraps `text` to the terminal width, each line starting with `indent` (then `hanging`). */
function wrap(text, indent, hanging = indent) {
  const limit = width();
  const lines = [];
  let line = indent;
  let empty = true;
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (!empty && line.length + 1 + word.length > limit) {
      lines.push(line);
      line = hanging + word;
    } else {
      line += (empty ? "" : " ") + word;
    }
    empty = false;
  }
  lines.push(line);
  return lines.join("\n");
}

function render(entry) {
  const out = [];
  out.push(`${entry.code}  (${entry.provider}, ${entry.kind})`);
  out.push("");
  out.push("Message");
  // Templates are printed verbatim (no wrapping), so they can be searched for.
  out.push(`  ${entry.template}`);
  out.push("");
  out.push("Raised by");
  out.push(wrap(entry.hooks.join(", "), "  "));
  out.push("");
  out.push("What it means");
  out.push(wrap(entry.meaning, "  "));
  out.push("");
  out.push("Common causes");
  for (const cause of entry.causes) out.push(wrap(cause, "  - ", "    "));
  out.push("");
  out.push("Fix");
  out.push(wrap(entry.fix, "  "));
  out.push("");
  out.push(`Reference: docs/errors.md#${entry.code.toLowerCase()}`);
  return `${out.join("\n")}\n`;
}

/**
 * A catalogued message embedded in `message` (the in-pod token of a Kubernetes transfer failure,
 * the exec error inside `fast-upload flush failed: …`), explained too.
 */
function embedded(native, message, entry) {
  for (const marker of ["): ", "failed: "]) {
    const at = message.indexOf(marker);
    if (at < 0) continue;
    const inner = native.explainError(message.slice(at + marker.length));
    if (inner && inner.code !== entry.code) return inner;
  }
  return null;
}

function renderEmbedded(inner) {
  const out = ["", `Embedded: ${inner.code}  (${inner.provider}, ${inner.kind})`];
  out.push(wrap(inner.meaning, "  "));
  out.push(wrap(`Fix: ${inner.fix}`, "  "));
  return `${out.join("\n")}\n`;
}

function readStdin() {
  return readFileSync(0, "utf8");
}

async function explain(args) {
  let json = false;
  const words = [];
  for (const arg of args) {
    if (arg === "--json") json = true;
    else if (arg === "-h" || arg === "--help") {
      process.stdout.write(`${USAGE}\n`);
      return EXIT_OK;
    } else words.push(arg);
  }
  let message;
  if (words.length === 0 || (words.length === 1 && words[0] === "-")) {
    if (words.length === 0 && process.stdin.isTTY) {
      return usageError('explain needs a message, e.g. paperclip-sandbox explain "CreateOS API URL is invalid."');
    }
    message = readStdin();
  } else {
    // An unquoted message arrives as several words.
    message = words.join(" ");
  }
  if (message.trim() === "") return usageError("explain needs a non-empty message");

  const { loadNative } = await import("paperclip-sandbox-native/plugin-kit");
  const native = await loadNative();
  const entry = native.explainError(message);
  if (!entry) {
    if (json) {
      process.stdout.write("null\n");
    } else {
      process.stderr.write(
        `${wrap(
          "No catalogued error matches this message. It may come from a dependency (the CreateOS API, the Kubernetes API server, the network or Node) and pass through unchanged; check that it was copied in full. The catalogue is in docs/errors.md.",
          "",
        )}\n`,
      );
    }
    return EXIT_UNKNOWN;
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(entry, null, 2)}\n`);
    return EXIT_OK;
  }
  process.stdout.write(render(entry));
  const inner = embedded(native, message, entry);
  if (inner) process.stdout.write(renderEmbedded(inner));
  return EXIT_OK;
}

const CHECK_USAGE = `Usage: paperclip-sandbox check --provider createos|kubernetes --config FILE [options]
       paperclip-sandbox check --provider createos|kubernetes --emulator [--config FILE] [options]

Runs a full lease lifecycle through the real plugin worker, forked as the Paperclip host forks it:
validate -> probe -> acquire -> realize -> sync in -> execute (live output) -> sync out -> release
(Kubernetes job backend: acquire -> execute -> release). The Kubernetes probe prints one check per
line: the Sandbox API, every permission the config needs, the tenant namespace, the runtime images.
Whatever was acquired is destroyed when a step fails or on Ctrl-C.

Options:
  --provider NAME     createos or kubernetes.
  --config FILE       The environment's driver config as JSON, as the host stores it (CreateOS:
                      apiUrl, apiKey, shape…; Kubernetes: kubeconfig or inCluster, companySlug…).
                      CreateOS on the official endpoint may take the key from CREATEOS_API_KEY.
  --backend NAME      Kubernetes only: sandbox-cr (default, or the config's backend) or job.
  --deep              Kubernetes only: after the probe, one more lease that runs the adapter's
                      own probe command (e.g. claude --version) in its image: acquire -> execute
                      -> release, each step timed.
  --emulator          Run against the embedded emulator; the endpoint and credentials in FILE
                      are ignored, and FILE is optional.
  --json              Progress on stderr; a JSON report on stdout.
  -h, --help          Show this help.

Exit codes: 0 every step passed, 1 a step failed, 2 usage or config error (including a config
the provider's validation rejects), 130 interrupted (after cleanup).`;

const EXIT_STEP_FAILED = 1;
const EXIT_INTERRUPTED = 130;

class UsageError extends Error {}

function parseCheckArgs(args) {
  const options = { emulator: false, json: false, deep: false };
  const takes = { "--provider": "provider", "--config": "config", "--backend": "backend" };
  for (let i = 0; i < args.length; i += 1) {
    let arg = args[i];
    let value;
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (arg === "-h" || arg === "--help") options.help = true;
    else if (arg === "--emulator") options.emulator = true;
    else if (arg === "--json") options.json = true;
    else if (arg === "--deep") options.deep = true;
    else if (takes[arg]) {
      if (value === undefined) {
        value = args[i + 1];
        i += 1;
      }
      if (value === undefined || value === "") throw new UsageError(`${arg} needs a value`);
      options[takes[arg]] = value;
    } else throw new UsageError(`check: unknown argument: ${arg}`);
  }
  if (options.help) return options;
  if (!options.provider) throw new UsageError("check needs --provider createos|kubernetes");
  if (!["createos", "kubernetes"].includes(options.provider)) {
    throw new UsageError(`--provider must be createos or kubernetes, not ${JSON.stringify(options.provider)}`);
  }
  if (options.deep && options.provider !== "kubernetes") throw new UsageError("--deep applies to --provider kubernetes only");
  if (options.backend !== undefined) {
    if (options.provider !== "kubernetes") throw new UsageError("--backend applies to --provider kubernetes only");
    if (!["sandbox-cr", "job"].includes(options.backend)) {
      throw new UsageError(`--backend must be sandbox-cr or job, not ${JSON.stringify(options.backend)}`);
    }
  }
  if (!options.config && !options.emulator) throw new UsageError("check needs --config FILE (or --emulator)");
  return options;
}

/** The config FILE: a JSON object. Errors are config errors (exit 2), never echoing the content. */
async function readConfigFile(file) {
  const { readFile } = await import("node:fs/promises");
  let text;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read config file ${file}: ${error.code === "ENOENT" ? "no such file" : error.message}`);
  }
  let config;
  try {
    config = JSON.parse(text);
  } catch (error) {
    // The parser's message can quote the file's text (a key): say where, not what.
    const at = /position (\d+)/.exec(error.message);
    throw new UsageError(`config file ${file} is not valid JSON${at ? ` (at character ${at[1]})` : ""}`);
  }
  if (!config || typeof config !== "object" || Array.isArray(config)) {
    throw new UsageError(`config file ${file} must hold a JSON object (the environment's driver config), not ${Array.isArray(config) ? "an array" : config === null ? "null" : typeof config}`);
  }
  return config;
}

/** The server a kubeconfig's current context points at (not a secret), for the header. */
function kubeServer(kubeconfig) {
  return /^\s*server:\s*["']?([^"'\s]+)/m.exec(kubeconfig ?? "")?.[1];
}

async function check(args) {
  let options;
  try {
    options = parseCheckArgs(args);
  } catch (error) {
    if (error instanceof UsageError) return checkUsageError(error.message);
    throw error;
  }
  if (options.help) {
    process.stdout.write(`${CHECK_USAGE}\n`);
    return EXIT_OK;
  }
  let config = {};
  if (options.config) {
    try {
      config = await readConfigFile(options.config);
    } catch (error) {
      if (error instanceof UsageError) {
        process.stderr.write(`paperclip-sandbox: ${error.message}\n`);
        return EXIT_USAGE;
      }
      throw error;
    }
  }

  const { readFile } = await import("node:fs/promises");
  const { startEmulator } = await import("../lib/emulators.js");
  const { EMULATOR_ARGS, Lifecycle, Reporter, maskConfig, onCtrlC, secretsOf } = await import("../lib/lifecycle.js");
  const out = options.json ? process.stderr : process.stdout;
  const reporter = new Reporter({ stream: out });
  const provider = options.provider;
  const emulators = [];
  let lifecycle = null;
  let interrupted = false;
  const removeHandler = onCtrlC(
    () => {
      interrupted = true;
      if (lifecycle) lifecycle.interrupt();
      else reporter.line("\n  Interrupted.");
    },
    () => {
      reporter.line("  Interrupted again: exiting without waiting for cleanup.");
      lifecycle?.kill();
      for (const emulator of emulators) emulator.child.kill("SIGKILL");
      process.exit(EXIT_INTERRUPTED);
    },
  );

  const workerEnv = {};
  let target;
  let backend = null;
  const started = Date.now();
  let result = { ok: false, interrupted: false, configRejected: false, failure: null };
  try {
    reporter.addSecrets(secretsOf(config));
    backend = provider === "kubernetes" ? (options.backend ?? config.backend ?? "sandbox-cr") : null;
    const backendLabel = backend ? ` (${backend} backend)` : "";
    if (options.emulator) reporter.line(`paperclip-sandbox check: ${provider}${backendLabel} against the embedded emulator`);
    if (options.emulator) {
      const name = `${provider}-emulator`;
      const emulator = await reporter.step(`start the embedded ${provider === "createos" ? "CreateOS" : "Kubernetes"} API emulator`, () =>
        startEmulator(name, EMULATOR_ARGS[provider]),
      );
      emulators.push(emulator);
      if (provider === "createos") {
        reporter.addSecrets([emulator.apiKey]);
        config = { shape: "s-1vcpu-1gb", ...config, apiUrl: emulator.url, apiKey: emulator.apiKey };
      } else {
        const kubeconfig = await readFile(emulator.kubeconfig, "utf8");
        const { inCluster: _ignored, ...rest } = config;
        config = { egressMode: "cilium", ...rest, kubeconfig };
        reporter.addSecrets(secretsOf({ kubeconfig }));
      }
      target = `embedded emulator at ${emulator.url}`;
    } else if (provider === "createos") {
      target = `${config.apiUrl ?? "(no apiUrl)"}`;
      if (process.env.CREATEOS_API_KEY) {
        workerEnv.CREATEOS_API_KEY = process.env.CREATEOS_API_KEY;
        reporter.addSecrets([process.env.CREATEOS_API_KEY]);
      }
    } else {
      target = config.inCluster === true ? "in-cluster service account" : `cluster ${kubeServer(config.kubeconfig) ?? "(no server in kubeconfig)"}`;
      for (const name of ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "HOME"]) {
        if (process.env[name]) workerEnv[name] = process.env[name];
      }
    }
    for (const name of ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"]) {
      if (process.env[name]) workerEnv[name] = process.env[name];
    }
    const backends = backend ? [backend] : undefined;
    if (options.emulator) reporter.line(`  emulator: ${target.replace("embedded emulator at ", "")}`);
    else reporter.line(`paperclip-sandbox check: ${provider}${backendLabel} against ${target}`);
    reporter.line(`  config: ${JSON.stringify(maskConfig(config))}`);
    if (!interrupted) {
      const targetGone = () => emulators.some((emulator) => emulator.child.exitCode !== null || emulator.child.signalCode !== null);
      lifecycle = new Lifecycle({ provider, config, backends, reporter, workerEnv, targetGone, deep: options.deep });
      result = await lifecycle.run();
    }
  } catch (error) {
    // A failed emulator start-up is already reported as a failed step.
    if (!reporter.steps.some((step) => !step.ok)) reporter.line(`  ✗ ${error.message}`);
    result = { ...result, failure: error };
  } finally {
    for (const emulator of emulators.splice(0)) await emulator.stop();
    removeHandler();
  }

  interrupted ||= result.interrupted;
  const exitCode = interrupted ? EXIT_INTERRUPTED : result.ok ? EXIT_OK : result.configRejected ? EXIT_USAGE : EXIT_STEP_FAILED;
  const passed = reporter.steps.filter((step) => step.ok).length;
  const failed = reporter.steps.filter((step) => !step.ok);
  const firstFailure = failed.find((step) => !step.interrupted);
  let explained = null;
  if (firstFailure && !interrupted) {
    try {
      const { loadNative } = await import("paperclip-sandbox-native/plugin-kit");
      const native = await loadNative();
      // A rejected config's message carries the provider's own after "…config: ".
      const own = firstFailure.error.slice(firstFailure.error.indexOf(": ") + 2);
      explained = native.explainError(firstFailure.error) ?? native.explainError(own);
    } catch {
      explained = null;
    }
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  reporter.line();
  reporter.line("Summary");
  reporter.line(`  provider  ${provider}${backend ? ` (${backend} backend)` : ""}`);
  reporter.line(`  target    ${target ?? "(not reached)"}`);
  reporter.line(`  steps     ${passed} passed, ${failed.length} failed, in ${seconds} s`);
  const cleanupFailed = failed.some((step) => step.label.startsWith("cleanup:"));
  if (interrupted) {
    reporter.line(
      cleanupFailed
        ? "  result    INTERRUPTED: cleanup incomplete, see the lines above (exit 130)"
        : "  result    INTERRUPTED: cleaned up whatever was acquired (exit 130)",
    );
  }
  else if (exitCode === EXIT_OK) reporter.line("  result    PASSED (exit 0)");
  else {
    reporter.line(`  result    FAILED at "${firstFailure?.label ?? "start-up"}" (exit ${exitCode})`);
    if (firstFailure) reporter.line(`  error     ${firstFailure.error}`);
    if (explained) {
      reporter.line(`  code      ${explained.code}: ${explained.meaning}`);
      reporter.line(`  fix       ${explained.fix}`);
      reporter.line(`  more      paperclip-sandbox explain "<the error>"  (docs/errors.md#${explained.code.toLowerCase()})`);
    }
  }
  if (options.json) {
    const report = {
      ok: exitCode === EXIT_OK,
      exitCode,
      interrupted,
      provider,
      backend,
      emulator: options.emulator,
      deep: options.deep,
      target: target ?? null,
      config: maskConfig(config),
      seconds: Number(seconds),
      steps: reporter.steps,
      failure: firstFailure
        ? { step: firstFailure.label, message: firstFailure.error, ...(explained ? { code: explained.code, fix: explained.fix } : {}) }
        : null,
    };
    process.stdout.write(`${reporter.redact(JSON.stringify(report, null, 2))}\n`);
  }
  return exitCode;
}

function checkUsageError(message) {
  process.stderr.write(`paperclip-sandbox: ${message}\n\n${CHECK_USAGE}\n`);
  return EXIT_USAGE;
}

async function main(argv) {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
      return usageError("missing command");
    case "-h":
    case "--help":
    case "help":
      process.stdout.write(`${USAGE}\n`);
      return EXIT_OK;
    case "explain":
      return explain(rest);
    case "check":
      return check(rest);
    default:
      return usageError(`unknown command: ${command}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`paperclip-sandbox: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = EXIT_USAGE;
  },
);
