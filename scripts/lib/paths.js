import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file lives in scripts/lib). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
