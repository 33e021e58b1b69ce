// Users test plugins with Jest as well as vitest; this small suite proves the addon and the
// plugins' hooks load and work under Jest's ESM runtime.
export default {
  testEnvironment: "node",
  testMatch: ["<rootDir>/__jest__/**/*.test.js"],
  transform: {},
};
