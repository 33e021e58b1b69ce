// `npm run pack`: every publishable package as a tarball in dist/npm/ (or --out DIR), with
// versions that agree:
//   paperclip-sandbox-native (the loader, plugin-kit, the CLI and its lib; optionalDependencies on
//     each per-platform package, pinned to its own version, as `napi prepublish` writes them),
//   paperclip-sandbox-native-<platform> for the binary built here (npm/<platform>, its `.node` only),
//   @paperclipai/plugin-createos and @paperclipai/plugin-kubernetes (exact-version dependency).
// With --local, also lays each plugin out as a self-contained folder in dist/local/ (see
// layoutLocal). Builds the release addon first unless --no-build (tests reuse one build). The published root
// manifest has no scripts: consumers install with --ignore-scripts and have no Rust sources.

import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { currentPlatform } from "../plugin-kit/index.js";
import { repoRoot } from "./lib/paths.js";

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));

/** The npm/<platform> folders and their package names. */
function platformPackages() {
  return readdirSync(path.join(repoRoot, "npm"))
    .filter((dir) => existsSync(path.join(repoRoot, "npm", dir, "package.json")))
    .map((dir) => ({ dir, json: readJson(path.join(repoRoot, "npm", dir, "package.json")) }));
}

/** Throws unless every package carries the root's version and the plugins pin it exactly. */
export function checkVersions() {
  const root = readJson(path.join(repoRoot, "package.json"));
  const problems = [];
  for (const { dir, json } of platformPackages()) {
    if (json.version !== root.version) problems.push(`npm/${dir} is ${json.version} (run npx napi version)`);
  }
  for (const plugin of ["createos", "kubernetes"]) {
    const json = readJson(path.join(repoRoot, "plugins", plugin, "package.json"));
    const wanted = json.dependencies?.[root.name];
    if (wanted !== root.version) problems.push(`plugins/${plugin} depends on ${root.name} ${wanted}, not ${root.version}`);
  }
  if (problems.length > 0) throw new Error(`versions disagree with ${root.name} ${root.version}: ${problems.join("; ")}`);
  return root.version;
}

function npmPack(dir, out) {
  const output = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", out], { cwd: dir, encoding: "utf8" });
  return path.join(out, JSON.parse(output)[0].filename);
}

/** Packs everything into `out`; returns {root, platform, plugins: {createos, kubernetes}} tarball paths. */
export function pack({ out = path.join(repoRoot, "dist/npm"), build = true } = {}) {
  const version = checkVersions();
  if (build) execFileSync("npx", ["napi", "build", "--platform", "--release", "--esm"], { cwd: repoRoot, stdio: "inherit" });
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const stage = path.join(out, ".stage");
  const root = readJson(path.join(repoRoot, "package.json"));

  // The platform package built here.
  const platform = currentPlatform();
  const binary = `${root.napi.binaryName}.${platform}.node`;
  if (!existsSync(path.join(repoRoot, binary))) throw new Error(`${binary} is not built (npm run build)`);
  const platformDir = path.join(stage, `npm-${platform}`);
  cpSync(path.join(repoRoot, "npm", platform), platformDir, { recursive: true });
  copyFileSync(path.join(repoRoot, binary), path.join(platformDir, binary));
  const platformTarball = npmPack(platformDir, out);

  // The root package: its `files`, and the manifest consumers get.
  const rootDir = path.join(stage, "root");
  mkdirSync(rootDir, { recursive: true });
  for (const entry of [...root.files, "README.md"]) cpSync(path.join(repoRoot, entry), path.join(rootDir, entry), { recursive: true });
  const { scripts: _scripts, devDependencies: _dev, workspaces: _workspaces, overrides: _overrides, ...published } = root;
  published.optionalDependencies = Object.fromEntries(platformPackages().map(({ json }) => [json.name, version]));
  writeFileSync(path.join(rootDir, "package.json"), `${JSON.stringify(published, null, 2)}\n`);
  const rootTarball = npmPack(rootDir, out);

  const plugins = {};
  for (const plugin of ["createos", "kubernetes"]) plugins[plugin] = npmPack(path.join(repoRoot, "plugins", plugin), out);
  rmSync(stage, { recursive: true, force: true });
  return { version, root: rootTarball, platform: platformTarball, plugins };
}

/**
 * A self-contained local-path layout of each plugin, for `paperclipai plugin install --local DIR`
 * or PAPERCLIP_KUBERNETES_PLUGIN_PATH: `<out>/<plugin>/` holds the plugin's dist/ and
 * package.json and a node_modules with every dependency physically present (the host refuses a
 * sandbox provider whose dependencies are not in its own node_modules): the SDK from the registry
 * (`registry`, default npm's), the native package and its platform package from the tarballs.
 * No install script runs. Returns {createos, kubernetes} folder paths.
 */
export function layoutLocal(tarballs, { out = path.join(repoRoot, "dist/local"), registry } = {}) {
  rmSync(out, { recursive: true, force: true });
  const folders = {};
  for (const [plugin, tarball] of Object.entries(tarballs.plugins)) {
    const dir = path.join(out, `plugin-${plugin}`);
    mkdirSync(dir, { recursive: true });
    execFileSync("tar", ["xzf", tarball, "-C", dir, "--strip-components=1"]);
    const args = ["install", "--ignore-scripts", "--omit=dev", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--install-links"];
    if (registry) args.push("--registry", registry);
    execFileSync("npm", [...args, tarballs.root, tarballs.platform], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
    const json = readJson(path.join(dir, "package.json"));
    for (const name of Object.keys(json.dependencies ?? {})) {
      if (!existsSync(path.join(dir, "node_modules", name, "package.json"))) throw new Error(`${dir}: ${name} is not in its node_modules`);
    }
    folders[plugin] = dir;
  }
  return folders;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const outAt = args.indexOf("--out");
  const result = pack({ build: !args.includes("--no-build"), out: outAt >= 0 ? path.resolve(args[outAt + 1]) : undefined });
  for (const file of [result.root, result.platform, ...Object.values(result.plugins)]) console.log(path.relative(process.cwd(), file));
  if (args.includes("--local")) {
    for (const dir of Object.values(layoutLocal(result))) console.log(path.relative(process.cwd(), dir));
  }
}
