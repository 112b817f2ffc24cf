import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { MAX_FRAME_BYTES } from "../../src/contract/versions.js";
import {
  Opener,
  RUNNER_CONNECT_PATH_PREFIX,
  RunnerHandshake,
  Sealer,
  authKey,
  clientProof,
  controlEnvelope,
  handshakeEnvelope,
  maxSecureFrameBytes,
  type RunnerLease,
} from "../../src/transport/index.js";
import {
  BUILD,
  HandRunner,
  RawWsClient,
  SecureAuthority,
  answerWithProof,
  assertCompleted,
  assertIntact,
  completeRun,
  finishWithLease,
  prpEvent,
  realRunner,
  refusalOf,
  until,
} from "./support.js";

/**
 * runtime.md §5.1–§5.5, end to end: a real AuthorityServer with its
 * SQLite store on 127.0.0.1, and runners that misbehave in one way each. Every attack must be
 * refused, its connection closed, the run's cursor and counters left as they were (only a
 * diagnostic added), a typed diagnostic recorded on the run, and a correct runner must still be
 * able to go on where its credential allows it.
 */
describe("security: attacks on a real authority are refused, closed, diagnosed, and change nothing durable", () => {
  let authority: SecureAuthority;
  before(async () => {
    authority = await SecureAuthority.start();
  });
  after(async () => {
    await authority.close();
  });

  it("a wrong proof (another token's key, a flipped bit) or a tampered token: refused before the ticket is consumed; the same ticket then runs the whole run", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 30_000);
    const before = await authority.snapshot(run.runId);

    // 1. The ticket's credential id, but the proof keyed by a token that is not the ticket.
    const otherKey = authKey(`bootstrap_${randomUUID()}`);
    const foreign = await answerWithProof(authority, run, ticket, (c, canonical) =>
      clientProof(otherKey, canonical, c.serverProof),
    );
    otherKey.fill(0);
    assert.deepEqual(foreign, { code: 1008, reason: "proof_mismatch" });
    await authority.diagnosed(run.runId, "proof_mismatch");

    // 2. The ticket's own key, one bit of the proof flipped.
    const key = authKey(ticket);
    const flipped = await answerWithProof(authority, run, ticket, (c, canonical) => {
      const proof = Buffer.from(clientProof(key, canonical, c.serverProof), "hex");
      proof[0]! ^= 0x01;
      return proof.toString("hex");
    });
    key.fill(0);
    assert.deepEqual(flipped, { code: 1008, reason: "proof_mismatch" });

    // 3. A tampered token through the real runner's handshake: its credential id locates nothing.
    const tampered = await realRunner(authority.url(run.runId), run, {
      kind: "bootstrap",
      token: `${ticket.slice(0, -1)}${ticket.endsWith("0") ? "1" : "0"}`,
    });
    assert.equal(refusalOf(tampered)?.code, "socket_closed");
    assert.match(refusalOf(tampered)!.message, /1008 unknown_credential/);
    await authority.diagnosed(run.runId, "unknown_credential");

    assertIntact(await authority.snapshot(run.runId), before);
    assert.equal((await authority.diagnostics(run.runId)).filter((d) => d.code === "proof_mismatch").length, 2);
    assert.equal(authority.server.activeRunnerConnectionCount(run.runId), 0);
    assert.equal(await authority.ticketUnused(ticket), true, "a failed proof does not consume the ticket (§5.3)");

    await assertCompleted(authority, run, await completeRun(authority, run, ticket));
  });

  it("a flood of WebSocket pings, before and after authentication: no pong is written, and the run goes on", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 30_000);
    const runner = await HandRunner.dial(authority.url(run.runId), run);
    try {
      let pongs = 0;
      runner.ws.on("pong", () => pongs++);
      const payload = Buffer.alloc(125, 0x70); // the largest a control frame carries
      for (let i = 0; i < 200; i++) runner.ws.ping(payload);
      await runner.authenticate({ kind: "bootstrap", token: ticket });
      for (let i = 0; i < 200; i++) runner.ws.ping(payload);
      runner.sendEvent(1);
      // The ACK left after every ping was read: a pong to any of them would have come before it.
      await runner.ackOf(1);
      assert.equal(pongs, 0, "400 pings of 125 bytes, not one answered");
      assert.equal((await authority.snapshot(run.runId)).ackedSourceSeq, 1);
    } finally {
      runner.close();
    }
  });

  it("a reused ticket: refused while its first connection lives on untouched, and again after that connection ends", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 30_000);
    const first = await HandRunner.dial(authority.url(run.runId), run);
    try {
      const session = await first.authenticate({ kind: "bootstrap", token: ticket });
      first.sendEvent(1);
      await first.ackOf(1);
      const before = await authority.snapshot(run.runId);

      const reused = await realRunner(authority.url(run.runId), run, { kind: "bootstrap", token: ticket });
      assert.match(refusalOf(reused)?.message ?? "", /1008 credential_used/);
      await authority.diagnosed(run.runId, "credential_used");
      assertIntact(await authority.snapshot(run.runId), before);

      // The live connection was not superseded: it goes on committing.
      assert.equal(authority.server.activeRunnerConnectionCount(run.runId), 1);
      for (let seq = 2; seq <= 4; seq++) first.sendEvent(seq);
      await first.ackOf(4);
      const afterRun = await authority.snapshot(run.runId);
      assert.equal(afterRun.ackedSourceSeq, 4);
      assert.equal(afterRun.currentConnectionId, session.binding.connectionId);
      assert.equal(afterRun.connectionCount, 1);
      first.close();
      await first.closed();

      const diagnosedBefore = (await authority.diagnostics(run.runId)).length;
      const again = await realRunner(authority.url(run.runId), run, { kind: "bootstrap", token: ticket });
      assert.match(refusalOf(again)?.message ?? "", /1008 credential_used/);
      await authority.diagnosed(run.runId, "credential_used", diagnosedBefore);
      assertIntact(await authority.snapshot(run.runId), afterRun);
      // Its lease is what the runner reconnects with.
      await finishWithLease(authority, run, session.lease, 6);
    } finally {
      first.close();
    }
  });

  it("a reused ticket raced: two handshakes with one ticket at once, exactly one gets a connection and a lease", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 30_000);
    const before = await authority.snapshot(run.runId);
    const results = await Promise.all(
      [1, 2].map(() => realRunner(authority.url(run.runId), run, { kind: "bootstrap", token: ticket })),
    );
    const winners = results.filter((r) => r.ok);
    assert.equal(winners.length, 1, results.map((r) => refusalOf(r)?.message ?? "ok").join("; "));
    assert.match(refusalOf(results.find((r) => !r.ok)!)!.message, /1008 (credential_used|unauthorized)/);
    await until(
      async () =>
        (await authority.diagnostics(run.runId)).some((d) => d.code === "credential_used" || d.code === "unauthorized"),
      "the loser's diagnostic",
    );
    const afterRun = await authority.snapshot(run.runId);
    assert.deepEqual(
      [afterRun.connectionCount, afterRun.freshBootstraps, afterRun.ackedSourceSeq],
      [before.connectionCount + 1, before.freshBootstraps + 1, 0],
    );
    const winner = winners[0]!;
    assert.ok(winner.ok);
    winner.value.close();
    await until(() => authority.server.activeRunnerConnectionCount(run.runId) === 0, "the winner's close");
    await finishWithLease(authority, run, winner.value.lease, 2);
  });

  it("a handshake message over 1 MiB: closed 1009 before any credential is looked at", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 30_000);
    const before = await authority.snapshot(run.runId);
    const runner = await HandRunner.dial(authority.url(run.runId), run);
    try {
      runner.sendJson(handshakeEnvelope("auth_hello", { pad: "x".repeat(MAX_FRAME_BYTES) }));
      assert.equal((await runner.closed()).code, 1009);
    } finally {
      runner.close();
    }
    await authority.diagnosed(run.runId, "frame_too_large");
    assertIntact(await authority.snapshot(run.runId), before);
    assert.equal(await authority.ticketUnused(ticket), true);
  });

  it("an expired ticket: refused at the hello; a fresh ticket then runs the whole run", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 1_000);
    await new Promise((r) => setTimeout(r, 1_100));
    const before = await authority.snapshot(run.runId);
    const late = await realRunner(authority.url(run.runId), run, { kind: "bootstrap", token: ticket });
    assert.match(refusalOf(late)?.message ?? "", /1008 credential_expired/);
    await authority.diagnosed(run.runId, "credential_expired");
    assertIntact(await authority.snapshot(run.runId), before);
    await assertCompleted(authority, run, await completeRun(authority, run, await authority.ticket(run.runId, 30_000)));
  });

  it("a lease or a ticket issued for another run: refused on this run, and both runs go on with their own credentials", async () => {
    const runA = await authority.newRun();
    const runB = await authority.newRun();
    const b = await HandRunner.dial(authority.url(runB.runId), runB);
    let leaseB: RunnerLease;
    try {
      leaseB = (await b.authenticate({ kind: "bootstrap", token: await authority.ticket(runB.runId, 30_000) })).lease;
    } finally {
      b.close();
      await b.closed();
    }
    const ticketB = await authority.ticket(runB.runId, 30_000);
    const beforeA = await authority.snapshot(runA.runId);
    const beforeB = await authority.snapshot(runB.runId);

    const attempts = [
      ["B's lease, with A's identity", runA, leaseB],
      ["B's lease, with B's identity", runB, leaseB],
      ["B's unused ticket, with A's identity", runA, { kind: "bootstrap", token: ticketB }],
    ] as const;
    for (const [what, identity, credential] of attempts) {
      const refused = await realRunner(authority.url(runA.runId), identity, credential);
      assert.match(refusalOf(refused)?.message ?? "", /1008 identity_mismatch/, what);
    }
    await until(
      async () => (await authority.server.authFailures(runA.runId)).identity_mismatch === 3,
      "three identity_mismatch refusals counted on run A",
    );
    assertIntact(await authority.snapshot(runA.runId), beforeA);
    assertIntact(await authority.snapshot(runB.runId), beforeB);
    assert.deepEqual(
      await authority.diagnostics(runB.runId),
      [],
      "nothing is written to the run the credential belongs to",
    );
    assert.deepEqual(await authority.server.authFailures(runB.runId), {});
    assert.equal(await authority.ticketUnused(ticketB), true);

    await finishWithLease(authority, runB, leaseB, 3);
    await assertCompleted(
      authority,
      runA,
      await completeRun(authority, runA, await authority.ticket(runA.runId, 30_000)),
    );
  });

  it("an Origin header on the upgrade: 403 before any WebSocket exists, recorded on the run its path names", async () => {
    const run = await authority.newRun();
    const before = await authority.snapshot(run.runId);
    for (const origin of ["Origin: http://127.0.0.1", "Origin: null"]) {
      const client = await RawWsClient.upgrade(authority.port, `${RUNNER_CONNECT_PATH_PREFIX}${run.runId}`, [origin]);
      try {
        assert.equal(client.status, "HTTP/1.1 403 Forbidden");
        await client.ended;
      } finally {
        client.destroy();
      }
    }
    await until(
      async () => (await authority.diagnostics(run.runId)).filter((d) => d.code === "origin_refused").length === 2,
      "two origin_refused diagnostics",
    );
    assertIntact(await authority.snapshot(run.runId), before);
    assert.equal(authority.server.activeRunnerConnectionCount(run.runId), 0);
    await assertCompleted(authority, run, await completeRun(authority, run, await authority.ticket(run.runId, 30_000)));
  });

  it("an unmasked client frame before authentication: closed 1002; the ticket stays good", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 30_000);
    const before = await authority.snapshot(run.runId);
    const client = await RawWsClient.upgrade(authority.port, `${RUNNER_CONNECT_PATH_PREFIX}${run.runId}`);
    try {
      assert.ok(client.accepted, client.status);
      const handshake = new RunnerHandshake({
        credential: { kind: "bootstrap", token: ticket },
        identity: run,
        runnerVersion: BUILD.version,
        runnerDigest: BUILD.digest,
        resume: { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 },
      });
      client.sendText(JSON.stringify(handshakeEnvelope("auth_hello", { ...handshake.hello })), false);
      handshake.destroy();
      await client.ended;
      assert.equal(client.closeCode, 1002);
    } finally {
      client.destroy();
    }
    await authority.diagnosed(run.runId, "unmasked_frame");
    assertIntact(await authority.snapshot(run.runId), before);
    assert.equal(await authority.ticketUnused(ticket), true);
    await assertCompleted(authority, run, await completeRun(authority, run, ticket));
  });

  it("an unmasked client frame after welcome (a correctly sealed event, over a raw socket): closed 1002, nothing committed", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 30_000);
    const client = await RawWsClient.upgrade(authority.port, `${RUNNER_CONNECT_PATH_PREFIX}${run.runId}`);
    try {
      assert.ok(client.accepted, client.status);
      // The handshake with masked frames, as any client must.
      const handshake = new RunnerHandshake({
        credential: { kind: "bootstrap", token: ticket },
        identity: run,
        runnerVersion: BUILD.version,
        runnerDigest: BUILD.digest,
        resume: { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 },
      });
      client.sendText(JSON.stringify(handshakeEnvelope("auth_hello", { ...handshake.hello })));
      const answered = handshake.answer(JSON.parse(await client.next()).payload, Date.now());
      assert.ok(answered.ok);
      client.sendText(JSON.stringify(handshakeEnvelope("auth_response", { ...answered.value.response })));
      const { keys } = answered.value;
      const opener = new Opener(keys.coreToClient, keys.sessionId, "core_to_client");
      const sealer = new Sealer(keys.clientToCore, keys.sessionId, "client_to_core");
      const opened = opener.open(await client.next());
      assert.ok(opened.ok);
      const welcome = handshake.acceptWelcome(JSON.parse(opened.value), Date.now());
      assert.ok(welcome.ok);
      const frame = (seq: number) => {
        const sealed = sealer.seal(
          JSON.stringify(
            controlEnvelope(
              "event",
              welcome.value.binding,
              { event: prpEvent(run, seq) },
              randomUUID(),
              new Date().toISOString(),
            ),
          ),
        );
        assert.ok(sealed.ok);
        return sealed.value;
      };
      client.sendText(frame(1));
      const ack = opener.open(await client.next());
      assert.ok(ack.ok);
      assert.deepEqual(JSON.parse(ack.value).payload, { ackedSourceSeq: 1 });
      const before = await authority.snapshot(run.runId);

      client.sendText(frame(2), false);
      await client.ended;
      assert.equal(client.closeCode, 1002);
      await authority.diagnosed(run.runId, "unmasked_frame");
      assertIntact(await authority.snapshot(run.runId), before);
      assert.equal(authority.server.activeRunnerConnectionCount(run.runId), 0);
      sealer.destroy();
      opener.destroy();
      await finishWithLease(authority, run, welcome.value.lease, 3);
    } finally {
      client.destroy();
    }
  });

  it("a secure frame replayed from an earlier session into a new one (at the counter it expects): tag mismatch, closed", async () => {
    const run = await authority.newRun();
    const first = await HandRunner.dial(authority.url(run.runId), run);
    let lease: RunnerLease;
    let captured: string;
    try {
      lease = (await first.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId, 30_000) })).lease;
      captured = first.sendEvent(1); // counter 0 of the first session
      await first.ackOf(1);
    } finally {
      first.close();
      await first.closed();
    }
    const before = await authority.snapshot(run.runId);
    const diagnosed = (await authority.diagnostics(run.runId)).length;

    const second = await HandRunner.dial(authority.url(run.runId), run);
    try {
      await second.authenticate(lease);
      const after = await authority.snapshot(run.runId); // the reconnect itself counts a connection
      assert.equal(after.connectionCount, before.connectionCount + 1);
      second.ws.send(captured); // counter 0, which the new session expects, under the old session's key
      assert.equal((await second.closed()).code, 1008);
      await authority.diagnosed(run.runId, "tag_mismatch", diagnosed);
      assertIntact(await authority.snapshot(run.runId), after);
    } finally {
      second.close();
    }
    await finishWithLease(authority, run, lease, 2);
  });

  describe("after welcome, on one connection that already committed event 1", () => {
    type Attack = (runner: HandRunner, firstFrame: string) => void;
    /** The plaintext of a sealed event envelope of exactly `bytes` bytes. */
    const eventOfSize = (runner: HandRunner, bytes: number): string => {
      const bare = runner.envelopeText("event", { event: prpEvent(runner.identity, 2), pad: "" });
      return runner.envelopeText("event", {
        event: prpEvent(runner.identity, 2),
        pad: "x".repeat(bytes - Buffer.byteLength(bare)),
      });
    };
    const cases: Array<[string, Attack, number, string[]]> = [
      ["a replayed secure frame (event 1's frame again)", (r, first) => r.ws.send(first), 1008, ["frame_replayed"]],
      [
        "a reordered frame (counter 2 before counter 1)",
        (r) => {
          const second = r.seal(r.envelopeText("event", { event: prpEvent(r.identity, 2) }));
          const third = r.seal(r.envelopeText("event", { event: prpEvent(r.identity, 3) }));
          r.ws.send(third);
          r.ws.send(second);
        },
        1008,
        ["frame_gap"],
      ],
      [
        "a plaintext (unsealed) control envelope",
        (r) => r.ws.send(r.envelopeText("event", { event: prpEvent(r.identity, 2) })),
        1008,
        ["plaintext_frame"],
      ],
      [
        "a sealed frame over 1 MiB on the wire",
        (r) => r.ws.send(r.seal(eventOfSize(r, MAX_FRAME_BYTES + 64 * 1024))),
        1009,
        ["frame_too_large"],
      ],
      [
        "a sealed frame whose plaintext is 1 MiB + 1 byte (within the wire bound)",
        (r) => {
          const frame = r.seal(eventOfSize(r, MAX_FRAME_BYTES + 1));
          assert.ok(Buffer.byteLength(frame) <= maxSecureFrameBytes(), "the wire check alone would let it through");
          r.ws.send(frame);
        },
        1009,
        ["frame_too_large"],
      ],
      [
        "a binary frame",
        (r) => r.ws.send(Buffer.from(r.seal(r.envelopeText("event", { event: prpEvent(r.identity, 2) })))),
        1003,
        ["binary_frame"],
      ],
      [
        "a tampered ciphertext",
        (r) => {
          const frame = r.seal(r.envelopeText("event", { event: prpEvent(r.identity, 2) }));
          r.ws.send(frame.replace(/"ciphertext":"(.)/, (_m, c: string) => `"ciphertext":"${c === "0" ? "1" : "0"}`));
        },
        1008,
        ["tag_mismatch"],
      ],
      ...(["runnerInstanceId", "environmentLeaseId", "runId", "normalizedSessionId", "turnId", "itemId"] as const).map(
        (field): [string, Attack, number, string[]] => [
          `one identity field changed on one sealed envelope: ${field}`,
          (r) =>
            r.ws.send(
              r.seal(r.envelopeText("event", { event: prpEvent(r.identity, 2) }, { [field]: `${r.identity[field]}x` })),
            ),
          1008,
          ["identity_mismatch"],
        ],
      ),
      [
        "the connectionId changed on one sealed envelope",
        (r) =>
          r.ws.send(
            r.seal(r.envelopeText("event", { event: prpEvent(r.identity, 2) }, { connectionId: "connection_999" })),
          ),
        1008,
        ["connection_mismatch"],
      ],
      [
        "the connectionLeaseId changed on one sealed envelope",
        (r) =>
          r.ws.send(
            r.seal(
              r.envelopeText(
                "event",
                { event: prpEvent(r.identity, 2) },
                { connectionLeaseId: "connection_lease_other" },
              ),
            ),
          ),
        1008,
        ["lease_mismatch"],
      ],
      [
        "a kind only the core sends (a sealed ack)",
        (r) => r.ws.send(r.seal(r.envelopeText("ack", { ackedSourceSeq: 1 }))),
        1008,
        ["unknown_kind"],
      ],
      [
        "a correct envelope carrying an event of another run (the event's own runId)",
        (r) => {
          r.ws.send(
            r.seal(r.envelopeText("event", { event: prpEvent(r.identity, 2, { runId: `${r.identity.runId}x` }) })),
          );
        },
        1008,
        ["identity_mismatch", "handler_failed"],
      ],
    ];

    for (const [what, attack, closeCode, codes] of cases) {
      it(what, async () => {
        const run = await authority.newRun();
        const queued = await authority.server.queueCommand(run.runId, "run.prepare", { workspace: "security" });
        assert.ok(queued.ok);
        const runner = await HandRunner.dial(authority.url(run.runId), run);
        try {
          const session = await runner.authenticate({
            kind: "bootstrap",
            token: await authority.ticket(run.runId, 30_000),
          });
          assert.equal(session.welcome.pendingCommands.length, 1);
          const firstFrame = runner.sendEvent(1);
          await runner.ackOf(1);
          const before = await authority.snapshot(run.runId);
          const diagnosed = (await authority.diagnostics(run.runId)).length;

          attack(runner, firstFrame);
          const closed = await runner.closed();
          assert.equal(closed.code, closeCode);
          for (const code of codes) await authority.diagnosed(run.runId, code, diagnosed);
          assertIntact(await authority.snapshot(run.runId), before);
          assert.deepEqual(
            (authority.committed.get(run.runId) ?? []).map((e) => e.sourceSeq),
            [1],
            "nothing but event 1 was committed",
          );
          assert.equal(authority.server.activeRunnerConnectionCount(run.runId), 0);

          // The lease the runner holds is untouched: it reconnects, resends, answers its command.
          await finishWithLease(authority, run, session.lease, 3);
          assert.deepEqual(
            (authority.committed.get(run.runId) ?? []).map((e) => e.sourceSeq),
            [1, 2, 3],
          );
        } finally {
          runner.close();
        }
      });
    }
  });
});
