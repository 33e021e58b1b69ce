import path from "node:path";
import { fileURLToPath } from "node:url";

/** The root of the paperclip-sandbox-native package (a checkout, or the installed package). */
export const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
