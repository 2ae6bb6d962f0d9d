// `cargo xtask bench stdio`'s TypeScript SDK client (written next to the
// conformance cache's node_modules at run time, so that the SDK resolves).
//
// node ts_client.mjs PROGRAM [ARGS…]
//
// Starts PROGRAM with the SDK's StdioClientTransport, connects a Client,
// checks one `echo` call, and prints {"ready":true,"sdk":VERSION}. Then, for
// each line {"calls":N,"width":K} on stdin, makes N `echo` calls with K in
// flight (K = 1: one after the other) and prints one line
// {"elapsed_ns":T,"latencies_ns":[…]}. End of stdin closes the client.

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const TEXT = "hello, bench";

const [program, ...args] = process.argv.slice(2);
if (!program) {
  process.stderr.write("usage: node ts_client.mjs PROGRAM [ARGS…]\n");
  process.exit(2);
}

// The SDK's package.json is not among its exports: read it from the folder.
let sdkVersion = "unknown";
try {
  const manifest = new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url);
  sdkVersion = JSON.parse(readFileSync(manifest, "utf8")).version ?? "unknown";
} catch {
  // Only the label is missing.
}

const client = new Client({ name: "bench-ts", version: "0" });
const transport = new StdioClientTransport({ command: program, args, stderr: "ignore" });
await client.connect(transport);

async function call() {
  const result = await client.callTool({ name: "echo", arguments: { text: TEXT } });
  const text = result.content?.[0]?.text;
  if (text !== TEXT) {
    throw new Error(`echo answered ${JSON.stringify(result)}`);
  }
}

await call();
process.stdout.write(JSON.stringify({ ready: true, sdk: sdkVersion }) + "\n");

async function run(calls, width) {
  const latencies = new Array(calls);
  let next = 0;
  async function worker() {
    for (;;) {
      const i = next++;
      if (i >= calls) return;
      const start = process.hrtime.bigint();
      await call();
      latencies[i] = Number(process.hrtime.bigint() - start);
    }
  }
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.max(1, width) }, worker));
  const elapsed = Number(process.hrtime.bigint() - start);
  return { elapsed_ns: elapsed, latencies_ns: latencies };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  try {
    const { calls, width } = JSON.parse(line);
    process.stdout.write(JSON.stringify(await run(calls, width)) + "\n");
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: String(e?.stack ?? e) }) + "\n");
  }
}
await client.close();
