// A deterministic workspace tree for the sync figures: `files` files spread over `dirs`
// directories, `bytes` of content in total, mixed sizes (mostly small source-like files, some
// medium, a few large), and content that does not compress (slices of a seeded random pool),
// so no layer can win by compressing. Same options -> byte-identical tree on every run.

import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

import { pool, removeOnExit } from "./common.js";

/** mulberry32: a tiny seeded PRNG, enough for sizes and offsets. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** File sizes summing to exactly `bytes`: 70 % 100 B-8 KiB, 25 % 8-64 KiB, 5 % 64 KiB-1 MiB, then scaled. */
function sizes(files, bytes, rand) {
  const logUniform = (lo, hi) => Math.exp(Math.log(lo) + rand() * (Math.log(hi) - Math.log(lo)));
  const raw = Array.from({ length: files }, () => {
    const r = rand();
    return r < 0.7 ? logUniform(100, 8 * 1024) : r < 0.95 ? logUniform(8 * 1024, 64 * 1024) : logUniform(64 * 1024, 1024 * 1024);
  });
  const scale = bytes / raw.reduce((a, b) => a + b, 0);
  const out = raw.map((s) => Math.max(1, Math.floor(s * scale)));
  // Rounding leaves a remainder: give it to the largest file so the total is exact.
  const largest = out.indexOf(Math.max(...out));
  out[largest] += bytes - out.reduce((a, b) => a + b, 0);
  return out;
}

/** Generates the tree in a fresh temp dir; resolves with {root, files, dirs, bytes, remove()}. */
export async function generateTree({ files, dirs, bytes, seed = 10 }) {
  const rand = prng(seed);
  const fileSizes = sizes(files, bytes, rand);
  const poolBytes = Math.max(2 * 1024 * 1024, Math.max(...fileSizes) * 2);
  const randomPool = Buffer.alloc(poolBytes);
  for (let i = 0; i + 4 <= poolBytes; i += 4) randomPool.writeUInt32LE((rand() * 4294967296) >>> 0, i);

  const parent = await mkdtemp(path.join(tmpdir(), "paperclip-bench-tree-"));
  const onExit = removeOnExit(parent);
  const root = path.join(parent, "workspace");
  const dirNames = Array.from({ length: dirs }, (_, d) => path.join(root, `dir-${String(d).padStart(3, "0")}`));
  for (const dir of dirNames) await mkdir(dir, { recursive: true });
  const offsets = fileSizes.map((size) => Math.floor(rand() * (poolBytes - size)));
  await pool(
    fileSizes.map((size, i) => () => {
      const offset = offsets[i];
      return writeFile(path.join(dirNames[i % dirs], `file-${String(i).padStart(5, "0")}.bin`), randomPool.subarray(offset, offset + size));
    }),
    32,
  );
  const remove = async () => {
    await rm(parent, { recursive: true, force: true });
    onExit.forget();
  };
  return { root, parent, files, dirs, bytes, remove };
}

/** Regular files under `dir` (recursively) and their total size. */
export async function countFiles(dir) {
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    files += 1;
    bytes += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return { files, bytes };
}
