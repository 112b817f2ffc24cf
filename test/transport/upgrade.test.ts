import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { WebSocket } from "ws";
import { MAX_FRAME_BYTES } from "../../src/contract/versions.js";
import { maxSecureFrameBytes } from "../../src/transport/index.js";
import {
  MemoryAuthority,
  TestServer,
  closeCode,
  frameHeader,
  rawSocket,
  rawUpgrade,
  readUntilClosed,
  upgradeRequest,
  wsFrame,
} from "./support.js";

const TEXT = 0x1;
const BINARY = 0x2;
const PATH = "/api/runner/v1/connect/run-1";

describe("upgrade guard", () => {
  let server: TestServer;
  beforeEach(async () => {
    server = await new TestServer(new MemoryAuthority(), { authTimeoutMs: 1_000 }).start();
  });
  afterEach(() => server.close());

  async function statusFor(request: string): Promise<string> {
    const socket = await rawSocket(server.port);
    const reply = readUntilClosed(socket);
    socket.write(request);
    return (await reply).toString("latin1").split("\r\n")[0]!;
  }

  it("refuses a request with an Origin header", async () => {
    assert.equal(await statusFor(upgradeRequest(PATH, ["Origin: http://127.0.0.1"])), "HTTP/1.1 403 Forbidden");
    assert.equal(await statusFor(upgradeRequest(PATH, ["Origin: null"])), "HTTP/1.1 403 Forbidden");
    assert.deepEqual(
      server.refused.map((e) => e.code),
      ["origin_refused", "origin_refused"],
    );
    assert.equal(server.results.length, 0);
  });

  it("refuses a wrong path, a query and WebSocket extensions", async () => {
    assert.equal(await statusFor(upgradeRequest("/api/runner/v1/connect/")), "HTTP/1.1 404 Not Found");
    assert.equal(await statusFor(upgradeRequest("/other/run-1")), "HTTP/1.1 404 Not Found");
    assert.equal(await statusFor(upgradeRequest(`${PATH}?x=1`)), "HTTP/1.1 400 Bad Request");
    assert.equal(
      await statusFor(upgradeRequest(PATH, ["Sec-WebSocket-Extensions: permessage-deflate"])),
      "HTTP/1.1 400 Bad Request",
    );
    assert.deepEqual(
      server.refused.map((e) => e.code),
      ["path_refused", "path_refused", "query_refused", "extensions_refused"],
    );
  });

  it("refuses upgrade headers over 16 KiB and accepts them just under", async () => {
    assert.equal(
      await statusFor(upgradeRequest(PATH, [`X-Pad: ${"a".repeat(16 * 1024)}`])),
      "HTTP/1.1 431 Request Header Fields Too Large",
    );
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}${PATH}`, {
      perMessageDeflate: false,
      headers: { "x-pad": "a".repeat(15 * 1024) },
    });
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    ws.close();
    const result = await server.accepted();
    assert.equal(result.ok ? "" : result.error.code, "socket_closed");
  });

  it("closes on an unmasked client frame (1002) with a typed diagnostic", async () => {
    const { socket, closed } = await rawUpgrade(server.port);
    socket.write(wsFrame(TEXT, Buffer.from("{}"), false));
    assert.equal(closeCode(await closed), 1002);
    const result = await server.accepted();
    assert.equal(result.ok ? "" : result.error.code, "unmasked_frame");
  });

  it("closes on a binary frame (1003)", async () => {
    const { socket, closed } = await rawUpgrade(server.port);
    socket.write(wsFrame(BINARY, Buffer.from("{}"), true));
    assert.equal(closeCode(await closed), 1003);
    const result = await server.accepted();
    assert.equal(result.ok ? "" : result.error.code, "binary_frame");
  });

  it("closes on a frame announcing more than the sealed size of a 1 MiB frame (1009)", async () => {
    const { socket, closed } = await rawUpgrade(server.port);
    socket.write(frameHeader(TEXT, maxSecureFrameBytes() + 1, true));
    assert.equal(closeCode(await closed), 1009);
    const result = await server.accepted();
    assert.equal(result.ok ? "" : result.error.code, "frame_too_large");
  });

  it("closes on a plaintext handshake message over 1 MiB (1009)", async () => {
    const { socket, closed } = await rawUpgrade(server.port);
    socket.write(wsFrame(TEXT, Buffer.from(JSON.stringify({ pad: "x".repeat(MAX_FRAME_BYTES) })), true));
    assert.equal(closeCode(await closed), 1009);
    const result = await server.accepted();
    assert.equal(result.ok ? "" : result.error.code, "frame_too_large");
  });

  it("accepts a masked text frame and judges its content", async () => {
    const { socket, closed } = await rawUpgrade(server.port);
    socket.write(wsFrame(TEXT, Buffer.from("not json"), true));
    assert.equal(closeCode(await closed), 1008);
    const result = await server.accepted();
    assert.equal(result.ok ? "" : result.error.code, "invalid_json");
  });

  it("closes a client that says nothing within the auth timeout", async () => {
    const { closed } = await rawUpgrade(server.port);
    assert.equal(closeCode(await closed), 1008);
    const result = await server.accepted();
    assert.equal(result.ok ? "" : result.error.code, "auth_timeout");
  });
});
