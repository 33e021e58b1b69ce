// A stand-in CreateOS API that only answers streaming exec, with frames of an exact size:
// `POST …/exec?stream=true` whose body's `args` end in "<totalBytes> <frameBytes>" (the bench
// puts them in the command line) gets totalBytes/frameBytes `{"stdout":"aaa…"}` lines, then
// `{"exit_code":0}`. The CreateOS emulator reads command output in <= 16 KiB pieces and
// coalesces small writes, so it cannot produce 64 KiB or 4 KiB frames on demand; this can.
// Runs as its own process; prints {"url"} once listening; exits when stdin closes.

import { once } from "node:events";
import http from "node:http";

const frames = new Map();
function frameFor(size) {
  if (!frames.has(size)) frames.set(size, Buffer.from(`{"stdout":"${"a".repeat(size)}"}\n`));
  return frames.get(size);
}

const server = http.createServer(async (req, res) => {
  let body = "";
  for await (const piece of req) body += piece;
  if (req.method !== "POST" || !/\/exec\?stream=true$/.test(req.url)) {
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":"frame server: exec only"}');
    return;
  }
  const text = JSON.stringify(JSON.parse(body));
  const match = /BENCH_FRAMES (\d+) (\d+)/.exec(text);
  if (!match) {
    res.writeHead(400, { "content-type": "application/json" }).end('{"error":"frame server: no BENCH_FRAMES"}');
    return;
  }
  const [total, size] = [Number(match[1]), Number(match[2])];
  const frame = frameFor(size);
  res.writeHead(200, { "content-type": "application/x-ndjson", "cache-control": "no-store" });
  for (let sent = 0; sent < total; sent += size) {
    if (!res.write(frame)) await once(res, "drain");
  }
  res.end('{"exit_code":0}\n');
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` })}\n`);
});
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
