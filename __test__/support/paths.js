import path from "node:path";

import { repoRoot } from "../../scripts/lib/paths.js";

export { repoRoot };

/** The golden vectors: `$PAPERCLIP_GOLDEN_DIR`, else `../shared/golden` beside the repo. */
export const goldenDir = process.env.PAPERCLIP_GOLDEN_DIR || path.resolve(repoRoot, "../shared/golden");

export const contractDir = path.resolve(repoRoot, "../shared/contract");
