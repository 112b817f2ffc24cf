import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, describe, it } from "node:test";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import { serverKey, tempRoot } from "../authority/support.js";
import { until } from "../support/until.js";
import { startApi, type TestApi } from "./support.js";

/** A socket to the API that sends nothing; `closed` turns true when the server ends it. */
async function silentSocket(url: string): Promise<{ socket: Socket; closed: () => boolean }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let closed = false;
  socket.on("close", () => void (closed = true));
  socket.on("error", () => {});
  await new Promise<void>((resolve) => {
    socket.once("connect", resolve);
    socket.once("close", resolve);
  });
  return { socket, closed: () => closed };
}

describe("API limits: the port cannot be held by silent sockets", () => {
  const tmp = tempRoot("prp-api-limits-");
  const apis: TestApi[] = [];
  after(async () => {
    for (const t of apis) {
      await t.api.close();
      await t.store.close();
    }
    tmp.cleanup();
  });

  it("a connection past the cap is dropped, and the API answers again once the held ones go", async () => {
    const t = await startApi(SqliteAuthorityStore.open(tmp.dir(), { serverKey }), {
      limits: { maxConnections: 3, requestTimeoutMs: 60_000, headersTimeoutMs: 60_000 },
    });
    apis.push(t);
    const held = [];
    for (let i = 0; i < 3; i++) held.push(await silentSocket(t.api.url));
    const extra = await silentSocket(t.api.url);
    await until(extra.closed, "the server to drop the connection past its cap");
    assert.equal(
      held.some((h) => h.closed()),
      false,
      "the connections within the cap stay",
    );
    for (const h of held) h.socket.destroy();
    await until(async () => (await t.call("GET", "/v1/runs", { scope: "read" }).catch(() => null))?.status === 200);
  });

  it("a socket that sends nothing is closed after the request timeout, and one that never finishes its headers too", async () => {
    const t = await startApi(SqliteAuthorityStore.open(tmp.dir(), { serverKey }), {
      limits: { requestTimeoutMs: 300, headersTimeoutMs: 300 },
    });
    apis.push(t);
    const silent = await silentSocket(t.api.url);
    const partial = await silentSocket(t.api.url);
    partial.socket.write("GET /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    await until(
      () => silent.closed() && partial.closed(),
      () => `both closed: ${silent.closed()} ${partial.closed()}`,
    );
    assert.equal((await t.call("GET", "/v1/runs", { scope: "read" })).status, 200, "and the API goes on");
  });
});
