import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, describe, it } from "node:test";
import { WebSocket } from "ws";
import { until } from "../support/until.js";
import { authorityFolder, killAll, startDaemon, type Daemon } from "./authority-processes.js";
import { adminJson } from "./run-cli.js";

/** Sends one text frame as the connection's first and waits (bounded) for the daemon to close it. */
async function helloThenClose(url: string, frame: string): Promise<void> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  let closed = false;
  ws.on("error", () => {});
  ws.on("close", () => (closed = true));
  ws.on("open", () => ws.send(frame));
  try {
    await until(() => closed, `the daemon to close a connection whose hello repeats a member name`);
  } finally {
    ws.terminate();
  }
}

describe("prp authority serve: what an unauthenticated peer sends cannot grow the log without bound", () => {
  const { dir, store } = authorityFolder("prp-log-bound-");
  const daemons: Daemon[] = [];
  after(async () => {
    await killAll(daemons);
    rmSync(dir, { recursive: true, force: true });
  });

  it("50 hellos each repeating a 500 KB member name add a few KiB of stderr, in lines of at most a few KiB, the name cut with a note", async () => {
    const daemon = await startDaemon([...store, "--listen", "127.0.0.1:0"]);
    daemons.push(daemon);
    const { connectPath } = adminJson(store, ["authority", "run", "create", "--json"]) as { connectPath: string };
    const name = "n".repeat(500_000);
    const frame = `{"kind":"auth_hello","${name}":1,"${name}":2}`;
    const before = daemon.stderr().length;
    for (let i = 0; i < 50; i++) await helloThenClose(`${daemon.url}${connectPath}`, frame);
    // The refusal is logged before the close reaches the peer or just after: wait for the first one.
    await until(
      () => daemon.stderr().includes("duplicate member name"),
      () => `the refusal to be logged; stderr: ${daemon.stderr().slice(-2000)}`,
    );
    const grown = daemon.stderr().slice(before);
    const lines = grown.split("\n").filter((l) => l !== "");
    assert.ok(grown.length < 64 * 1024, `stderr grew by ${grown.length} bytes over 50 refusals`);
    for (const line of lines)
      assert.ok(line.length <= 4096, `a log line of ${line.length} bytes: ${line.slice(0, 300)}`);
    assert.match(grown, /bytes cut\)/, "a cut says so");
    assert.match(grown, /times so far/, "repeats are counted, not each logged");
  });
});
