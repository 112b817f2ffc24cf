import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import type { WebSocket } from "ws";
import { coreUnsentLimit, maxSecureFrameBytes } from "../../src/transport/index.js";
import { MAX_FRAME_BYTES } from "../../src/contract/versions.js";
import { establishedOn } from "../support/proc-net-tcp.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";
import { Inbox, MemoryAuthority, TestServer, connectRunner } from "./support.js";

/** A command of about 400 KB, which the runner's channel takes as it is (its payload is any object). */
const BIG = { command: { pad: "x".repeat(400_000) } };
/** The core's limit here: far under what the kernel's buffers hold, so only the core's own buffer can pass it. */
const LIMIT = 1024 * 1024;
/** Frames a core may send before the test gives up: kernel buffers of a few MB plus the limit, many times over. */
const MAX_SENDS = 200;

describe("a runner that does not read what the core sends", () => {
  const servers: TestServer[] = [];
  after(async () => {
    for (const s of servers) await s.close();
  });

  it("the core's default holds four whole frames unsent", () => {
    assert.equal(coreUnsentLimit(MAX_FRAME_BYTES), 4 * maxSecureFrameBytes(MAX_FRAME_BYTES));
  });

  it("is closed send_overflow once the core holds more than its limit unsent, and its socket ends; one that reads takes far more", async () => {
    const server = await new TestServer(new MemoryAuthority(), { maxUnsentBytes: LIMIT }).start();
    servers.push(server);
    const runnerInbox = new Inbox();
    let runnerWs: WebSocket | null = null;
    const runner = await connectRunner(
      server.url,
      { kind: "bootstrap", token: server.authority.issueBootstrap() },
      runnerInbox,
      {},
      (ws) => (runnerWs = ws),
    );
    assert.ok(runner.ok, runner.ok ? "" : runner.error.message);
    const core = await server.accepted();
    assert.ok(core.ok);
    const channel = core.value.channel;
    const ended = () => server.inbox.closed;

    // A runner that reads: 20 frames, 16 MB sealed, each sent once the one before arrived.
    for (let i = 1; i <= 20; i++) {
      assert.ok(channel.send("command", BIG).ok, `command ${i} to a reading runner`);
      await within(
        runnerInbox.until(() => runnerInbox.envelopes.length === i),
        30_000,
        `command ${i} at the reading runner`,
      );
    }
    assert.equal(ended(), undefined, "a runner that reads is never closed for it");
    assert.equal(establishedOn(server.port), 1, "the core's side of the connection, in /proc/net/tcp");

    // The same runner stops reading: the kernel's buffers fill, then the core's.
    runnerWs!.pause();
    let sent = 0;
    while (ended() === undefined) {
      assert.ok(sent < MAX_SENDS, `the core still open after ${sent} frames to a runner that reads nothing`);
      assert.ok(channel.send("command", BIG).ok, "a send before the channel ended");
      sent++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(ended()?.code, "send_overflow", ended()?.message);
    assert.ok(sent * 2 * 400_000 > LIMIT, `closed after ${sent} frames, before its limit could be passed`);
    assert.equal(channel.send("command", BIG).ok, false, "a closed channel sends nothing");
    // It never answers the close frame: the core ends the socket after its grace, not ws's 30 s.
    await until(() => establishedOn(server.port) === 0, "the core to end the socket of a runner that does not read");
    runnerWs!.resume();
    await within(
      runnerInbox.until(() => runnerInbox.closed !== undefined),
      10_000,
      "the runner's channel to end",
    );
    // How much of what the core held reaches the runner is the kernel's affair: under load its
    // buffers can take the rest in during the grace. What holds every time: nothing arrives twice
    // and nothing but the commands sent (a redial is sent what was lost again).
    const got = runnerInbox.envelopes;
    assert.ok(got.length <= 20 + sent, `${got.length} frames for ${20 + sent} sent`);
    assert.equal(new Set(got.map((e) => e.envelopeId)).size, got.length, "an envelope arrived twice");
    assert.deepEqual(new Set(got.map((e) => e.kind)), new Set(["command"]));
  });
});
