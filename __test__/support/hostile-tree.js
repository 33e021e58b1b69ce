// Helpers of the hostile-sandbox specs: a forged tar header, as a root agent that replaced the
// sandbox's archiver would write it, and a snapshot of a host tree to prove nothing changed.

import { createHash } from "node:crypto";
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import path from "node:path";

/** One ustar header block (512 bytes): `type` `0` file, `1` hard link, `2` symlink, `5` dir. */
export function ustarHeader({ name, type, size = 0, link = "" }) {
  const block = Buffer.alloc(512);
  const field = (offset, length, text) => block.write(text, offset, length, "utf8");
  const octal = (offset, length, value) => field(offset, length, `${value.toString(8).padStart(length - 1, "0")}\0`);
  field(0, 100, name);
  octal(100, 8, 0o644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, 0);
  block.fill(" ", 148, 156);
  field(156, 1, type);
  field(157, 100, link);
  field(257, 6, "ustar\0");
  field(263, 2, "00");
  let sum = 0;
  for (const byte of block) sum += byte;
  field(148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return block;
}

/** Every path under `root` but `skip` (links not followed): kind, link target, or link count and content hash. */
export async function snapshot(root, skip) {
  const out = {};
  const walk = async (dir) => {
    for (const name of (await readdir(dir)).sort()) {
      const full = path.join(dir, name);
      if (full === skip) continue;
      const stats = await lstat(full);
      if (stats.isSymbolicLink()) out[full] = `link ${await readlink(full)}`;
      else if (stats.isDirectory()) {
        out[full] = "dir";
        await walk(full);
      } else out[full] = `file ${stats.nlink} ${createHash("sha256").update(await readFile(full)).digest("hex")}`;
    }
  };
  await walk(root);
  return out;
}
