// Floor 1: a bare JSON-RPC worker, no SDK. Answers initialize / health /
// environmentValidateConfig / shutdown by hand over NDJSON stdio, so the bench can tell what
// Node itself costs (start-up, RSS, a stdio round trip) apart from the SDK and the provider.

let buffer = "";
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

function handle(message) {
  if (message.id === undefined || typeof message.method !== "string") return;
  const reply = (result) => send({ jsonrpc: "2.0", id: message.id, result });
  switch (message.method) {
    case "initialize":
      return reply({ ok: true, supportedMethods: ["health", "shutdown", "environmentValidateConfig"] });
    case "health":
      return reply({ status: "ok" });
    case "environmentValidateConfig":
      return reply({ ok: true });
    case "shutdown":
      reply(null);
      return setImmediate(() => process.exit(0));
    default:
      return send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `Unknown method: ${message.method}` } });
  }
}

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf("\n")) !== -1) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (!line) continue;
    try {
      handle(JSON.parse(line));
    } catch {
      // not JSON: ignore, as the SDK does
    }
  }
});
process.stdin.on("end", () => process.exit(0));
