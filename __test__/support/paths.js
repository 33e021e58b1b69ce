import path from "node:path";

import { repoRoot } from "../../scripts/lib/paths.js";

export { repoRoot };

/** The repository's test data: the error contract and the golden vectors (tests/data). */
export const testDataDir = path.join(repoRoot, "tests/data");

/** The golden vectors: `$PAPERCLIP_GOLDEN_DIR`, else tests/data/golden. */
export const goldenDir = process.env.PAPERCLIP_GOLDEN_DIR || path.join(testDataDir, "golden");

/** The error contract: `$PAPERCLIP_CONTRACT_DIR`, else tests/data/contract. */
export const contractDir = process.env.PAPERCLIP_CONTRACT_DIR || path.join(testDataDir, "contract");
