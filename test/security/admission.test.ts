import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { connect, type Socket } from "node:net";
import { after, describe, it } from "node:test";
import { authKey, clientProof, RUNNER_CONNECT_PATH_PREFIX } from "../../src/transport/index.js";
import { ManualTimers } from "../support/manual-timers.js";
import { establishedOn } from "../support/proc-net-tcp.js";
import { within } from "../support/within.js";
import { STILL_HEARTBEAT } from "../transport/support.js"; // a runner here answers no ping and must not be closed for it
import { HandRunner, RawWsClient, SecureAuthority, answerWithProof, until } from "./support.js";

/**
 * Issue 9 item 8: connections that never authenticate, or go silent once they did, are closed
 * within a bounded time; unauthenticated sockets are capped per address and in total; refusals
 * before authentication are counted, and never push the run's other diagnostics out.
 */
describe("admission: idle and unauthenticated connections", () => {
  const authorities: SecureAuthority[] = [];
  const sockets: Socket[] = [];
  after(async () => {
    for (const s of sockets) s.destroy();
    for (const a of authorities) await a.close();
  });

  async function start(...args: Parameters<typeof SecureAuthority.start>): Promise<SecureAuthority> {
    const authority = await SecureAuthority.start(...args);
    authorities.push(authority);
    return authority;
  }

  /** A TCP connection to the authority from `localAddress`; resolves once connected. */
  function tcp(authority: SecureAuthority, localAddress = "127.0.0.1"): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port: authority.port, host: "127.0.0.1", localAddress }, () => resolve(socket));
      sockets.push(socket);
      socket.once("error", reject);
    });
  }

  /** Everything the server sends until it ends the connection, within a generous bound. */
  function reply(socket: Socket, what: string): Promise<string> {
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => {});
    return within(
      new Promise((resolve) => socket.once("close", () => resolve(Buffer.concat(chunks).toString("latin1")))),
      10_000,
      what,
    );
  }

  const connectPath = (runId: string) => `${RUNNER_CONNECT_PATH_PREFIX}${runId}`;

  it("a socket that sends nothing is answered 408 and closed at the headers timeout, not Node's 90 s; an upgraded runner is not", async () => {
    const authority = await start({ connections: { headersTimeoutMs: 1_000 }, heartbeat: STILL_HEARTBEAT });
    const run = await authority.newRun();
    const runner = await HandRunner.dial(authority.url(run.runId), run);
    try {
      await runner.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId, 30_000) });
      const socket = await tcp(authority);
      assert.match(await reply(socket, "the server to close a silent socket"), /^HTTP\/1\.1 408 /);
      await until(() => authority.server.admission().unauthenticated === 0, "the socket no longer counted");
      // The runner's connection is older than the silent socket: the timeout passed it by.
      runner.sendEvent(1);
      await within(runner.ackOf(1), 5_000, "the ack on the runner's connection");
    } finally {
      runner.close();
    }
  });

  it("a half-sent upgrade request is answered 408 and closed at the headers timeout", async () => {
    const authority = await start({ connections: { headersTimeoutMs: 300 } });
    const run = await authority.newRun();
    const socket = await tcp(authority);
    const answered = reply(socket, "the server to close a half-sent request");
    socket.write(`GET ${connectPath(run.runId)} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n`);
    assert.match(await answered, /^HTTP\/1\.1 408 /);
  });

  it("the handshake deadline runs from the TCP accept: a socket not authenticated by then is destroyed; an authenticated one is not", async () => {
    const timers = new ManualTimers();
    const authority = await start({
      connections: { headersTimeoutMs: 60_000, handshakeDeadlineMs: 3_000, timers },
      heartbeat: STILL_HEARTBEAT,
    });
    const run = await authority.newRun();
    const idle = await tcp(authority);
    const idleClosed = reply(idle, "the deadline to destroy a socket that never sent a byte");
    const half = await tcp(authority);
    const halfClosed = reply(half, "the deadline to destroy a socket that sent half a request");
    half.write(`GET ${connectPath(run.runId)} HTTP/1.1\r\n`);
    const runner = await HandRunner.dial(authority.url(run.runId), run);
    try {
      await runner.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId, 30_000) });
      // Live once welcomed; the two idle sockets got their deadlines at their accept, before it.
      await until(() => authority.server.activeRunnerConnectionCount(run.runId) === 1, "the runner's connection live");
      timers.advance(2_999);
      assert.equal(idle.destroyed || half.destroyed, false, "not before the deadline");
      timers.advance(1);
      assert.deepEqual([await idleClosed, await halfClosed], ["", ""], "destroyed without a word");
      assert.deepEqual(authority.server.admission(), { unauthenticated: 0, refused: 0, timedOut: 2 });
      // The authenticated runner stopped counting at its welcome and lives on: an event is committed and acked.
      runner.sendEvent(1);
      await within(runner.ackOf(1), 5_000, "the ack on the authenticated connection");
      assert.equal(authority.server.activeRunnerConnectionCount(run.runId), 1);
    } finally {
      runner.close();
    }
  });

  it("an authenticated runner that goes silent and stops reading is closed 1008 peer_silent at the dead-peer limit, its socket ended soon after", async () => {
    const timers = new ManualTimers();
    const authority = await start({ heartbeat: { timers } });
    const run = await authority.newRun();
    const runner = await HandRunner.dial(authority.url(run.runId), run);
    try {
      await runner.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId, 30_000) });
      const closed = runner.closed();
      // A stalled runner: it reads nothing more, so it never answers a ping or the close frame.
      (runner.ws as unknown as { _socket: Socket })._socket.pause();
      assert.equal(establishedOn(authority.port), 1, "the server's side of the connection, in /proc/net/tcp");
      timers.advance(120_000); // the limit is 3 missed beats of 30 s: past it at the 4th beat
      assert.equal(authority.server.activeRunnerConnectionCount(run.runId), 1, "past the limit at one beat only");
      timers.advance(30_000);
      assert.equal((await authority.diagnosed(run.runId, "peer_silent")).code, "peer_silent");
      assert.equal(authority.server.activeRunnerConnectionCount(run.runId), 0);
      // ws alone would hold the socket 30 s for the close frame's answer.
      await until(() => establishedOn(authority.port) === 0, "the server to end the stalled runner's socket");
      (runner.ws as unknown as { _socket: Socket })._socket.resume();
      assert.deepEqual(await within(closed, 5_000, "the runner to read the close"), {
        code: 1008,
        reason: "peer_silent",
      });
    } finally {
      runner.close();
    }
  });

  it("unauthenticated sockets are capped per address (429) and in total (503); a closed one makes room", async () => {
    // Held sockets send nothing: under a long headers timeout they stay unauthenticated throughout.
    const authority = await start({
      connections: { headersTimeoutMs: 60_000, maxUnauthenticatedPerAddress: 2, maxUnauthenticated: 3 },
      heartbeat: STILL_HEARTBEAT,
    });
    const run = await authority.newRun();
    const path = connectPath(run.runId);
    const refusal = async (from: string) => {
      const client = await RawWsClient.upgrade(authority.port, path, [], from);
      await within(client.ended, 5_000, "the refused socket to be closed");
      return client.status;
    };
    // The server takes connections in the order they were accepted: each is counted before the next.
    const a1 = await tcp(authority, "127.0.0.1");
    await tcp(authority, "127.0.0.1");
    assert.equal(await refusal("127.0.0.1"), "HTTP/1.1 429 Too Many Requests");
    await tcp(authority, "127.0.0.2");
    assert.equal(await refusal("127.0.0.3"), "HTTP/1.1 503 Service Unavailable", "three in total");
    assert.deepEqual(authority.server.admission(), { unauthenticated: 3, refused: 2, timedOut: 0 });
    assert.ok(
      authority.log.some((line) => /refused 1 connection\(s\) at the admission caps/.test(line)),
      authority.log.join("\n"),
    );

    a1.destroy();
    await until(() => authority.server.admission().unauthenticated === 2, "the closed socket no longer counted");
    // A real runner from 127.0.0.1 gets the room, and once welcomed no longer counts.
    const runner = await HandRunner.dial(authority.url(run.runId), run);
    try {
      await runner.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId, 30_000) });
      await until(() => authority.server.admission().unauthenticated === 2, "the welcomed runner no longer counted");
      await tcp(authority, "127.0.0.1");
      await until(() => authority.server.admission().unauthenticated === 3, "room for one more from 127.0.0.1");
      assert.equal(authority.server.admission().refused, 2);
    } finally {
      runner.close();
    }
  });

  it("200 failed proofs are counted, not kept: the run's other diagnostics stay, with the first and latest refusal", async () => {
    const authority = await start();
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 60_000);
    // A meaningful diagnostic: an authenticated runner sends a frame that is not sealed JSON.
    const runner = await HandRunner.dial(authority.url(run.runId), run);
    try {
      await runner.authenticate({ kind: "bootstrap", token: ticket });
      runner.ws.send(runner.seal("not json"));
      await within(runner.closed(), 5_000, "the close for the malformed frame");
      await authority.diagnosed(run.runId, "invalid_json");
      const otherKey = authKey(`bootstrap_${randomUUID()}`);
      const spare = await authority.ticket(run.runId, 60_000); // a ticket of the run, proven with the wrong key
      for (let i = 0; i < 200; i++) {
        const closed = await answerWithProof(authority, run, spare, (c, canonical) =>
          clientProof(otherKey, canonical, c.serverProof),
        );
        assert.deepEqual(closed, { code: 1008, reason: "proof_mismatch" }, `attempt ${i + 1}`);
      }
      otherKey.fill(0);
      await until(
        async () => (await authority.server.authFailures(run.runId)).proof_mismatch === 200,
        "200 refusals recorded",
      );
      // Logged the 1st, 2nd, 4th… 128th time, with the count: a peer repeating a failure cannot grow the log with each try.
      const logged = authority.log.filter((line) => /handshake refused: proof_mismatch/.test(line));
      assert.equal(logged.length, 8, logged.join("\n"));
      assert.match(logged.at(-1)!, /\(128 times so far/);
      const kept = await authority.diagnostics(run.runId);
      assert.ok(
        kept.some((d) => d.code === "invalid_json"),
        `the meaningful diagnostic is still there: ${JSON.stringify(kept.map((d) => d.code))}`,
      );
      assert.equal(kept.filter((d) => d.code === "proof_mismatch").length, 2, "the first and the latest");
      assert.deepEqual(await authority.server.authFailures(run.runId), { proof_mismatch: 200 });
    } finally {
      runner.close();
    }
  });
});
