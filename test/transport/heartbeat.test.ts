import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import {
  Heartbeat,
  defaultDeadPeerTimeoutMs,
  type ChannelHandlers,
  type ControlEnvelope,
  type HeartbeatOptions,
  type TransportError,
} from "../../src/transport/index.js";
import { ManualTimers } from "../support/manual-timers.js";
import { within } from "../support/within.js";
import { Inbox, MemoryAuthority, STILL_HEARTBEAT, TestServer, connectRunner } from "./support.js";

function beating(timeoutMs?: number) {
  const timers = new ManualTimers();
  let beats = 0;
  const silent: TransportError[] = [];
  const heartbeat = new Heartbeat(
    250,
    { timers, ...(timeoutMs ? { deadPeerTimeoutMs: timeoutMs } : {}) },
    () => beats++,
    (e) => silent.push(e),
  );
  return { heartbeat, timers, silent, beats: () => beats };
}

describe("heartbeat (runtime.md §5.3 step 8, §5.5)", () => {
  it("beats every interval, and takes the peer for dead once the limit is passed at two beats in a row", () => {
    const { timers, silent, beats } = beating(1_000);
    timers.advance(1_000);
    assert.equal(beats(), 4);
    timers.advance(250);
    assert.deepEqual(
      [beats(), silent.length],
      [5, 0],
      "over the limit once: one more beat, so what waits on the socket is read first",
    );
    timers.advance(250);
    assert.deepEqual([beats(), silent.map((e) => e.code)], [5, ["peer_silent"]]);
    assert.match(silent[0]!.message, /1500 ms .* 1000 ms/);
    assert.equal(timers.waiting, 0, "a dead peer ends the beat");
  });

  it("hearing the peer keeps it alive, and so does this side's own handler holding the reader", () => {
    const { heartbeat, timers, silent } = beating(1_000);
    timers.advance(1_000);
    heartbeat.heard(); // a frame arrived: its handler runs
    timers.advance(10_000);
    assert.equal(silent.length, 0, "nothing can be heard while this side does not read");
    heartbeat.reading();
    timers.advance(1_250);
    assert.equal(silent.length, 0);
    timers.advance(250);
    assert.equal(silent.length, 1, "silence counts from when this side read again");
  });

  it("defaults to 3 missed beats, judged at two beats in a row; stopped, it neither beats nor judges", () => {
    assert.deepEqual([defaultDeadPeerTimeoutMs(250), defaultDeadPeerTimeoutMs(10_000)], [750, 30_000]);
    const { heartbeat, timers, silent, beats } = beating();
    timers.advance(1_000);
    assert.deepEqual([beats(), silent.length], [4, 0], "one beat per interval; past the limit at one beat only");
    timers.advance(250);
    assert.deepEqual([beats(), silent.length], [4, 1], "the 5th beat finds the peer dead and sends nothing");
    const stopped = beating();
    stopped.heartbeat.stop();
    stopped.timers.advance(60_000);
    assert.deepEqual([stopped.beats(), stopped.silent.length, stopped.timers.waiting], [0, 0, 0]);
    assert.ok(beats() > 0 && heartbeat !== stopped.heartbeat);
  });
});

/** A runner's handlers that answer each ping with a pong while `answering`, as a durable runner does. */
class PongingInbox extends Inbox implements ChannelHandlers {
  answering = true;
  reply: ((envelope: ControlEnvelope) => void) | null = null;

  override onEnvelope(envelope: ControlEnvelope): void {
    super.onEnvelope(envelope);
    if (envelope.kind === "ping" && this.answering) this.reply?.(envelope);
  }
}

describe("heartbeats over WebSocket on 127.0.0.1", () => {
  let authority: MemoryAuthority;
  const servers: TestServer[] = [];
  const channels: Array<{ close(): void }> = [];

  beforeEach(() => {
    authority = new MemoryAuthority();
  });
  afterEach(async () => {
    for (const c of channels.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.close();
  });

  async function server(heartbeat: HeartbeatOptions, heartbeatIntervalMs: number): Promise<TestServer> {
    const s = await new TestServer(authority, { heartbeat, heartbeatIntervalMs }).start();
    servers.push(s);
    return s;
  }

  it("the core pings every interval and a runner that answers is never taken for dead", async () => {
    const timers = new ManualTimers();
    const core = await server({ timers }, 250);
    const inbox = new PongingInbox();
    const runner = await connectRunner(core.url, { kind: "bootstrap", token: authority.issueBootstrap() }, inbox);
    assert.ok(runner.ok, runner.ok ? "" : runner.error.message);
    channels.push(runner.value.channel);
    inbox.reply = () =>
      void runner.value.channel.send("pong", { lifecycle: "ready", outboxBytes: 0, ackedSourceSeq: 0 });
    // 40 beats of 250 ms: far past the 750 ms limit, each answered.
    for (let beat = 1; beat <= 40; beat++) {
      timers.advance(250);
      await within(
        core.inbox.until(() => core.inbox.envelopes.filter((e) => e.kind === "pong").length === beat),
        5_000,
        `pong ${beat}`,
      );
    }
    assert.equal(inbox.envelopes.filter((e) => e.kind === "ping").length, 40);
    assert.equal(core.inbox.closed, undefined);

    inbox.answering = false;
    timers.advance(1_000);
    const closed = () => core.inbox.closed;
    assert.equal(closed(), undefined, "3 beats missed, and past the limit at the 4th only");
    timers.advance(250);
    assert.equal(closed()?.code, "peer_silent");
    await within(
      inbox.until(() => inbox.closed !== undefined),
      5_000,
      "the runner to see the close",
    );
    assert.match(inbox.closed?.message ?? "", /1008 peer_silent/, "the close reason on the wire names it");
  });

  it("the core closes a runner that went silent on a live socket, within a bounded wait", async () => {
    const core = await server({ deadPeerTimeoutMs: 300 }, 100);
    const inbox = new PongingInbox(); // it never replies: the socket stays open, nothing comes back
    const runner = await connectRunner(core.url, { kind: "bootstrap", token: authority.issueBootstrap() }, inbox);
    assert.ok(runner.ok, runner.ok ? "" : runner.error.message);
    channels.push(runner.value.channel);
    await within(
      core.inbox.until(() => core.inbox.closed !== undefined),
      10_000,
      "the core to close the silent runner",
    );
    assert.equal(core.inbox.closed?.code, "peer_silent");
    assert.ok(
      inbox.envelopes.some((e) => e.kind === "ping"),
      "pings went out on the wire",
    );
    await within(
      inbox.until(() => inbox.closed !== undefined),
      5_000,
      "the runner to see the close",
    );
    assert.match(inbox.closed?.message ?? "", /1008 peer_silent/);
  });

  it("the runner closes an authority that went silent on a live socket, within a bounded wait", async () => {
    const core = await server(STILL_HEARTBEAT, 100); // the core never pings
    const inbox = new Inbox();
    const runner = await connectRunner(core.url, { kind: "bootstrap", token: authority.issueBootstrap() }, inbox, {
      heartbeat: { deadPeerTimeoutMs: 300 },
    });
    assert.ok(runner.ok, runner.ok ? "" : runner.error.message);
    channels.push(runner.value.channel);
    await within(
      inbox.until(() => inbox.closed !== undefined),
      10_000,
      "the runner to close the silent authority",
    );
    assert.equal(inbox.closed?.code, "peer_silent");
    await within(
      core.inbox.until(() => core.inbox.closed !== undefined),
      5_000,
      "the core to see the close",
    );
    assert.match(core.inbox.closed?.message ?? "", /1008 peer_silent/);
  });

  it("the welcome carries the authority's interval: the core pings at it and the runner judges by it", async () => {
    const coreTimers = new ManualTimers();
    const core = await server({ timers: coreTimers }, 1_234);
    const inbox = new PongingInbox();
    const runnerTimers = new ManualTimers();
    const runner = await connectRunner(core.url, { kind: "bootstrap", token: authority.issueBootstrap() }, inbox, {
      heartbeat: { timers: runnerTimers },
    });
    assert.ok(runner.ok, runner.ok ? "" : runner.error.message);
    channels.push(runner.value.channel);
    assert.equal(runner.value.welcome.payload.heartbeatIntervalMs, 1_234, "the runner's parsed welcome");
    const pings = () => inbox.envelopes.filter((e) => e.kind === "ping").length;
    coreTimers.advance(1_233);
    coreTimers.advance(1);
    await within(
      inbox.until(() => pings() === 1),
      5_000,
      "the first ping",
    );
    coreTimers.advance(2 * 1_234);
    await within(
      inbox.until(() => pings() === 3),
      5_000,
      "a ping per interval",
    );
    assert.equal(pings(), 3, "no ping before its interval");
    // The core stops pinging (its clock stands still): the runner's limit is 3 × 1,234 ms.
    const closed = () => inbox.closed;
    runnerTimers.advance(4 * 1_234);
    assert.equal(closed(), undefined, "past the limit at one beat only");
    runnerTimers.advance(1_234);
    assert.equal(closed()?.code, "peer_silent");
    assert.match(closed()?.message ?? "", /limit is 3702 ms/);
  });
});
