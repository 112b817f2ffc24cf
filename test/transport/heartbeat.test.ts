import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import {
  Heartbeat,
  defaultDeadPeerTimeoutMs,
  type HeartbeatOptions,
  type TransportError,
} from "../../src/transport/index.js";
import { ManualTimers } from "../support/manual-timers.js";
import type { WebSocket } from "ws";
import { until } from "../support/until.js";
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

/** `times` steps of `stepMs` on the clock, `act` after each. */
function stepping(timers: ManualTimers, times: number, stepMs: number, act: () => void): void {
  for (let i = 0; i < times; i++) {
    timers.advance(stepMs);
    act();
  }
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

  it("a control frame (a WebSocket pong) keeps the peer alive, and holds nothing back", () => {
    const { heartbeat, timers, silent, beats } = beating(1_000);
    stepping(timers, 40, 250, () => heartbeat.alive()); // the pong to each beat
    assert.deepEqual([beats(), silent.length], [40, 0]);
    timers.advance(1_500);
    assert.equal(silent.length, 1, "once the pongs stop, silence counts from the last one");
  });

  it("frames both ways within an interval take the beat's place; one way only does not", () => {
    const { heartbeat, timers, silent, beats } = beating(1_000);
    stepping(timers, 40, 200, () => {
      heartbeat.sent(); // an event out …
      heartbeat.heard(); // … and its ACK back
      heartbeat.reading();
    });
    assert.deepEqual([beats(), silent.length], [0, 0], "a busy connection pays for no beat");
    stepping(timers, 8, 250, () => heartbeat.sent()); // this side keeps sending; the peer has gone quiet
    // Quiet for more than the interval and a beat's lateness (a tenth): the tick at 250 ms still
    // counts the peer's last frame, the one at 500 ms beats.
    assert.equal(beats(), 4, "beats resume once the peer is quiet past the interval, though this side sends");
    assert.equal(silent.length, 1, "and the silent peer is still taken for dead");
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

/**
 * The core's beats as the runner's WebSocket hears them, and a switch that makes the runner
 * deaf to them: its WebSocket stops answering pings, as a hung or partitioned runner would.
 */
function watchBeats(ws: WebSocket) {
  const beats = {
    heard: 0,
    stopAnswering: () => {
      ws.pong = () => {};
    },
  };
  ws.on("ping", () => beats.heard++);
  return beats;
}
type Beats = ReturnType<typeof watchBeats>;

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

  /**
   * A runner on `core` whose socket's pings are counted (watchBeats), deaf to them from the
   * start if asked; closed after the test.
   */
  async function watchedRunner(core: TestServer, options: Parameters<typeof connectRunner>[3] = {}, deaf = false) {
    const inbox = new Inbox();
    let beats: Beats | undefined;
    const runner = await connectRunner(
      core.url,
      { kind: "bootstrap", token: authority.issueBootstrap() },
      inbox,
      options,
      (ws) => {
        beats = watchBeats(ws);
        if (deaf) beats.stopAnswering();
      },
    );
    assert.ok(runner.ok, runner.ok ? "" : runner.error.message);
    channels.push(runner.value.channel);
    return { inbox, beats: beats!, runner: runner.value };
  }

  it("the core pings every interval and a runner that answers is never taken for dead", async () => {
    const timers = new ManualTimers();
    const core = await server({ timers }, 250);
    const { inbox, beats } = await watchedRunner(core);
    // 40 beats of 250 ms: far past the 750 ms limit, each answered by the runner's WebSocket.
    for (let beat = 1; beat <= 40; beat++) {
      timers.advance(250);
      await until(() => core.pongs === beat, `pong ${beat}`, 5_000);
    }
    assert.equal(beats.heard, 40, "the runner's socket heard one ping per beat");
    assert.equal(
      inbox.envelopes.filter((e) => e.kind === "ping").length,
      0,
      "a beat is a WebSocket ping, never a sealed envelope",
    );
    assert.equal(core.inbox.closed, undefined);

    beats.stopAnswering();
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

  it("a connection with frames both ways each interval is not pinged; once it goes quiet, it is", async () => {
    const timers = new ManualTimers();
    const core = await server({ timers }, 250);
    const { inbox, beats, runner } = await watchedRunner(core);
    await until(() => core.results.some((r) => r.ok), "the core's side of the connection", 5_000);
    const coreChannel = core.results.find((r) => r.ok)!.value.channel;
    for (let i = 1; i <= 12; i++) {
      timers.advance(200);
      runner.channel.send("pong", { lifecycle: "running", outboxBytes: 0, ackedSourceSeq: 0 });
      await until(() => core.inbox.envelopes.length === i, `the runner's frame ${i}`, 5_000);
      coreChannel.send("ack", { ackedSourceSeq: 0 });
      await until(() => inbox.envelopes.filter((e) => e.kind === "ack").length === i, `the core's frame ${i}`, 5_000);
    }
    assert.equal(beats.heard, 0, "2.4 s of traffic both ways at a 250 ms interval: no ping on the wire");
    timers.advance(250); // the tick at 2.5 s: the last frames are 100 ms old, still no beat
    for (let beat = 1; beat <= 4; beat++) {
      timers.advance(250);
      await until(() => beats.heard === beat, `ping ${beat} after the traffic stopped`, 5_000);
    }
    assert.equal(core.inbox.closed, undefined, "each ping answered: the runner is alive");
  });

  it("the core closes a runner that went silent on a live socket, within a bounded wait", async () => {
    const core = await server({ deadPeerTimeoutMs: 300 }, 100);
    // It never answers: the socket stays open, nothing comes back.
    const { inbox, beats } = await watchedRunner(core, {}, true);
    await within(
      core.inbox.until(() => core.inbox.closed !== undefined),
      10_000,
      "the core to close the silent runner",
    );
    assert.equal(core.inbox.closed?.code, "peer_silent");
    assert.ok(beats.heard > 0, "pings went out on the wire");
    assert.equal(core.pongs, 0, "and none was answered");
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
    const runnerTimers = new ManualTimers();
    const { inbox, beats, runner } = await watchedRunner(core, { heartbeat: { timers: runnerTimers } });
    assert.equal(runner.welcome.payload.heartbeatIntervalMs, 1_234, "the runner's parsed welcome");
    const pings = () => beats.heard ?? 0;
    coreTimers.advance(1_233);
    coreTimers.advance(1);
    await until(() => pings() === 1, "the first ping", 5_000);
    coreTimers.advance(2 * 1_234);
    await until(() => pings() === 3, "a ping per interval", 5_000);
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
