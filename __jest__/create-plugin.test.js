// createPlugin() under Jest: the same cases as the vitest suite (__test__/support/create-plugin-cases.js).
import { createPluginCases } from "../__test__/support/create-plugin-cases.js";

createPluginCases({ describe, it, expect, beforeAll, afterAll });
