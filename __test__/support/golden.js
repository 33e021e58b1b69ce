import { readFileSync } from "node:fs";
import path from "node:path";

import { goldenDir } from "./paths.js";

/** The cases of one vector file, e.g. `createos/config.json`. */
export function loadCases(relative) {
  const file = JSON.parse(readFileSync(path.join(goldenDir, relative), "utf8"));
  if (!Array.isArray(file.cases) || file.cases.length === 0) {
    throw new Error(`${relative} has no cases`);
  }
  return file.cases;
}

/** The recorded shape of an outcome, for a hook call that resolved or threw. */
export async function outcomeOf(call) {
  try {
    const value = await call();
    return { returns: value === undefined ? null : value };
  } catch (error) {
    return { throws: { name: error.name, message: error.message } };
  }
}
