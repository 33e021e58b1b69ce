// createPlugin() under vitest: the original tests' pattern (see support/create-plugin-cases.js).
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createPluginCases } from "./support/create-plugin-cases.js";

createPluginCases({ describe, it, expect, beforeAll, afterAll });
