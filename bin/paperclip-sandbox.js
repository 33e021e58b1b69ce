#!/usr/bin/env node
// paperclip-sandbox: the operator's command line for the Paperclip CreateOS and Kubernetes
// sandbox providers. The error reference itself lives in Rust (crates/error-catalog); this file
// only parses arguments and prints.
//
// Exit codes: 0 success, 1 `explain` found no catalogued error, 2 usage error or failure.

import { readFileSync } from "node:fs";

const USAGE = `Usage: paperclip-sandbox <command> [options]

Commands:
  explain "MESSAGE"   Explain an error message of the CreateOS or Kubernetes provider: its
                      stable code, the hooks that raise it, what it means, common causes and
                      the fix. Quote the message; "-" (or no message with piped input) reads
                      it from stdin. --json prints the entry as JSON.
  check               Run a full lease lifecycle against a real environment
                      (--provider createos|kubernetes --config FILE, or --emulator).
                      Not implemented yet.

Options:
  -h, --help          Show this help.

Exit codes: 0 success, 1 explain found no catalogued error, 2 usage error or failure.
The full reference is docs/errors.md.`;

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

function check() {
  process.stderr.write(
    "paperclip-sandbox: `check` is not implemented yet. It will run a full lease lifecycle " +
      "(validate, probe, acquire, realize, sync, execute, release) against the environment a config " +
      "names, or against the embedded emulator with --emulator. Until then, `npm start` runs the " +
      "lifecycle on the emulators.\n",
  );
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
