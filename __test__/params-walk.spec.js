// Hook params read from the JS value by the reader's form (src/bridge/params.rs and
// params_reader.js) must be exactly the tree the text path makes of them (`JSON.stringify`, then serde_json), and
// anything JSON.stringify treats specially must go down the text path. `debugReadParams` reads
// one value both ways.

import vm from "node:vm";

import { describe, expect, it } from "vitest";

import * as native from "../index.js";
import { invoke } from "../plugin-kit/index.js";

const read = (params) => native.debugReadParams(params);

/** Walked, and the walk's tree is the text path's, byte for byte. */
function expectWalkedAsText(params) {
  const { walked, parsed, parseError } = read(params);
  expect(parseError ?? null).toBeNull();
  expect(walked).not.toBeNull();
  expect(walked).toBe(parsed);
}

/** Left to the text path. */
function expectLeftToText(params) {
  expect(read(params).walked ?? null).toBeNull();
}

describe("params read from the JS value", () => {
  it("go over in the form only when they hold a long string, as JSON.stringify's text otherwise", () => {
    const long = "k".repeat(512);
    expect(read({ driverKey: "kubernetes", config: { kubeconfig: long } }).route).toBe("form");
    expect(read({ driverKey: "kubernetes", config: { list: ["a", long] } }).route).toBe("form");
    expect(read({ driverKey: "createos", config: { apiUrl: "https://api.sb.createos.sh", shape: "s", kubeconfig: long.slice(1) } }).route).toBe("text");
    expect(read({ config: { kubeconfig: long, when: new Date(0) } }).route).toBe("text");
    expect(read({ a: Array.from({ length: 200 }, () => 1), b: long }).route).toBe("text");
    expect(read(() => 1).route).toBe("none");
    expect(read({ big: 1n, long }).route).toBe("thrown");
  });

  it("carries plain data exactly as the text path does", () => {
    const kubeconfig = "apiVersion: v1\nkind: Config\n" + "x".repeat(5000) + '\n"quoted" \\ tab\t';
    const cases = [
      { driverKey: "kubernetes", config: { kubeconfig, companySlug: "acme", backend: "sandbox-cr" } },
      { a: 1, b: -1, c: 0.1, d: 1.5e-7, e: 5e-324, f: 1e21, g: 1e20, h: 2 ** 53, i: 2 ** 63, j: -(2 ** 63), k: 2 ** 64, l: Number.MAX_VALUE, m: -0 },
      { nan: NaN, inf: Infinity, minf: -Infinity, list: [NaN, Infinity, -0] },
      { t: true, f: false, n: null, s: "", nested: { deeper: { deepest: [[], {}, [1, [2, [3]]]] } } },
      { skipped: undefined, fn() {}, sym: Symbol("s"), [Symbol("key")]: 1, kept: "yes" },
      { list: [undefined, () => 1, Symbol("s"), "x"] },
      { 10: "ten", 2: "two", b: "b", a: "a", "-1": "minus", 1.5: "frac" },
      { unicode: "é ü ☃ \u2028 😀", [`key é ☃ 😀`]: "v" },
      { lone: "cut \ud83d here \ude00 end", [`k \ud800`]: ["\udfff"] },
      { collide: { "a\ud800": 1, "a\udbff": 2 } },
      // The reader's own tokens and length prefixes inside keys and strings.
      { "s1:": "d1;", "{": "}[", "]": "s999:", n: "t", "": ":", "12:": ["s2:ab", "{}", "[]"] },
      { lengths: ["\ud83d\ude00s2:", "😀".repeat(70), "é".repeat(200) + "s3:abc"] },
      Object.assign(Object.create(null), { bare: "prototype-less", nested: Object.create(null) }),
      "a string",
      42,
      true,
      [1, "two", { three: 3 }],
      new Array(3),
    ];
    for (const params of cases) expectWalkedAsText(params);
    // Keys and values on both sides of the short read's 128-byte stack buffer, with characters
    // of every UTF-8 length where it could be cut.
    for (let length = 110; length <= 140; length++) {
      for (const tail of ["", "é", "☃", "😀", "\ud800"]) {
        const text = "k".repeat(length) + tail;
        const { walked } = read({ [text]: text });
        expect(JSON.parse(walked)).toEqual({ [text.replace("\ud800", "\ufffd")]: text.replace("\ud800", "\ufffd") });
        expectWalkedAsText({ [text]: [text] });
      }
    }
    // Another realm's plain objects (Jest runs plugins in a VM context) go down the text path,
    // and arrive the same.
    const foreign = vm.runInNewContext('({ config: { kubeconfig: "a\\nb", list: [1, "two"] } })');
    expect(read(foreign).walked ?? null).toBeNull();
    expect(JSON.parse(read(foreign).parsed)).toEqual({ config: { kubeconfig: "a\nb", list: [1, "two"] } });
    const hidden = { shown: 1 };
    Object.defineProperty(hidden, "hidden", { value: 2, enumerable: false });
    expectWalkedAsText(hidden);
  });

  it("leaves to the text path what JSON.stringify treats specially", () => {
    class Shape {
      constructor() {
        this.side = 1;
      }
    }
    const cases = [
      { when: new Date(0) },
      { buffer: Buffer.from("abc") },
      { custom: { toJSON: () => "custom" } },
      { boxed: new String("boxed"), number: new Number(1) },
      { instance: new Shape() },
      { typed: new Uint8Array([1, 2]) },
      { map: new Map([["a", 1]]) },
      Object.assign([1, 2], { toJSON: () => "array" }),
      () => 1,
      Symbol("top"),
    ];
    for (const params of cases) expectLeftToText(params);
  });

  it("leaves wide and deep params to the text path, and still reads them right there", () => {
    const wide = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`key${i}`, i]));
    const long = { list: Array.from({ length: 500 }, (_, i) => i) };
    let deep = { leaf: true };
    for (let i = 0; i < 40; i++) deep = { deep };
    for (const params of [wide, long, deep]) {
      expectLeftToText(params);
      const { parsed } = read(params);
      expect(JSON.parse(parsed)).toEqual(JSON.parse(JSON.stringify(params)));
    }
  });

  it("gives up on a BigInt, a getter that throws and a cycle, and the text path fails as before", () => {
    const cyclic = { name: "loop" };
    cyclic.self = cyclic;
    const throwing = {};
    Object.defineProperty(throwing, "boom", {
      enumerable: true,
      get() {
        throw new Error("getter threw");
      },
    });
    const cases = [
      [{ big: 1n }, /BigInt/],
      [throwing, /getter threw/],
      [{ a: { b: cyclic } }, /circular/],
    ];
    for (const [params, error] of cases) {
      const { walked, parseError } = read(params);
      expect(walked ?? null).toBeNull();
      expect(parseError).toMatch(error);
    }
  });

  it("a getter is read as JSON.stringify reads it", () => {
    const withGetter = {};
    Object.defineProperty(withGetter, "computed", { enumerable: true, get: () => "from a getter" });
    expectWalkedAsText(withGetter);
  });

  it("a hook still rethrows what JSON.stringify throws for params it cannot carry", async () => {
    const provider = native.NativeProvider.kubernetes();
    await expect(invoke(() => provider.hookCaller()("onEnvironmentValidateConfig", { config: { big: 1n } }))).rejects.toThrow(/BigInt/);
    const result = await invoke(() => provider.hookCaller()("onEnvironmentValidateConfig", { config: { kubeconfig: "k", when: new Date(0) } }));
    expect(result.ok).toBe(true);
  });
});
