// The texts every hook call moves across napi (src/bridge/strings.rs): the params into Rust in
// one pass (a buffer of three bytes per UTF-16 unit; past 64 Ki units, measured first), the
// outcome's text and long strings back (copied as Latin-1 when ASCII, decoded as UTF-8
// otherwise) and the hook name. Kubernetes validate hands its kubeconfig back verbatim in `normalizedConfig`, so any
// string sent in that place must come back exactly: in process, through plugin-kit's `invoke`
// as the plugin workers call it.

import { describe, expect, it } from "vitest";

import * as native from "../index.js";
import { invoke } from "../plugin-kit/index.js";

const ONE_PASS_LIMIT = 64 * 1024;

async function echoedKubeconfig(kubeconfig) {
  const provider = native.NativeProvider.kubernetes();
  const result = await invoke(() => provider.hookCaller()("onEnvironmentValidateConfig", { driverKey: "kubernetes", config: { kubeconfig } }));
  expect(result.ok).toBe(true);
  return result.normalizedConfig.kubeconfig;
}

describe("hook texts across the boundary", () => {
  const cases = {
    "ASCII with escapes": 'apiVersion: v1\nkind: Config\n"quoted" \\ back\tslash\r\n',
    "two-byte and three-byte characters": "é ü ß ☃ € \u{2028}\u{2029} \u{feff}",
    "astral characters (surrogate pairs)": "😀 𝄞 🇩🇪",
    "every UTF-8 length at once, just under the one-pass limit": "aé☃😀".repeat(Math.floor((ONE_PASS_LIMIT - 200) / 5)),
    "ASCII past the one-pass limit (measured first)": "x".repeat(ONE_PASS_LIMIT + 1),
    "non-ASCII past the one-pass limit": "☃😀é".repeat(ONE_PASS_LIMIT),
    "one character": "k",
  };
  for (const [name, text] of Object.entries(cases)) {
    it(`carries ${name} in and back out unchanged`, async () => {
      expect(await echoedKubeconfig(text)).toBe(text);
    });
  }

  it("carries a lone surrogate as U+FFFD, as Node writes it as UTF-8", async () => {
    expect(await echoedKubeconfig("cut \ud83d here \ude00 end")).toBe("cut \ufffd here \ufffd end");
  });

  it("reads a hook name with non-ASCII characters exactly", async () => {
    const provider = native.NativeProvider.createos();
    const error = await invoke(() => provider.hookCaller()("onNoSuchHook☃😀", {})).catch((e) => e);
    expect(error.message).toBe("paperclip-sandbox-native internal error: onNoSuchHook☃😀 has no native implementation");
    const empty = await invoke(() => provider.hookCaller()("", {})).catch((e) => e);
    expect(empty.message).toBe("paperclip-sandbox-native internal error:  has no native implementation");
  });
});
