import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, it } from "node:test";
import { WebSocket } from "ws";
import { MAX_FRAME_BYTES } from "../../src/contract/versions.js";
import {
  Opener,
  RunnerHandshake,
  Sealer,
  authKey,
  authKeyDigest,
  controlEnvelope,
  credentialId,
  handshakeEnvelope,
  type ControlEnvelope,
  type EnvelopeBinding,
  type RunnerCredential,
} from "../../src/transport/index.js";
import { EXPECTED, IDENTITY, Inbox, MemoryAuthority, RESUME, TestServer, connectRunner } from "./support.js";

/** Text messages of a plain ws client, none lost between awaits. */
class Messages {
  private readonly queue: string[] = [];
  private wake: (() => void) | null = null;
  readonly closed: Promise<number>;

  constructor(ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.queue.push(data.toString("utf8"));
      this.wake?.();
    });
    this.closed = new Promise((resolve) => ws.on("close", (code: number) => resolve(code)));
  }

  async next(): Promise<string> {
    while (this.queue.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.queue.shift()!;
  }
}

async function plainClient(url: string) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const messages = new Messages(ws);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  return { ws, messages };
}

/**
 * A runner assembled from the pure pieces, so a test can send what the real channel never would:
 * wrong proofs, plaintext after welcome, replays, reordering, a changed identity field.
 */
async function handRunner(url: string, token: string, clientProof?: string) {
  const { ws, messages } = await plainClient(url);
  const handshake = new RunnerHandshake({
    credential: { kind: "bootstrap", token },
    identity: IDENTITY,
    runnerVersion: EXPECTED.runnerVersion,
    runnerDigest: EXPECTED.runnerDigest,
    resume: RESUME,
  });
  ws.send(JSON.stringify(handshakeEnvelope("auth_hello", { ...handshake.hello })));
  const challenge = JSON.parse(await messages.next());
  const answered = handshake.answer(challenge.payload, Date.now());
  assert.ok(answered.ok);
  const { keys, response } = answered.value;
  ws.send(JSON.stringify(handshakeEnvelope("auth_response", { ...response, ...(clientProof ? { clientProof } : {}) })));
  if (clientProof) return { ws, messages, sealer: null, binding: null };
  const opened = new Opener(keys.coreToClient, keys.sessionId, "core_to_client").open(await messages.next());
  assert.ok(opened.ok);
  const welcome = handshake.acceptWelcome(JSON.parse(opened.value), Date.now());
  assert.ok(welcome.ok);
  // A sealer that allows more than 1 MiB, to show the receiver's own check.
  return {
    ws,
    messages,
    sealer: new Sealer(keys.clientToCore, keys.sessionId, "client_to_core", 4 * MAX_FRAME_BYTES),
    binding: welcome.value.binding,
  };
}

const event = (binding: EnvelopeBinding, seq: number, changes: Partial<ControlEnvelope> = {}) =>
  JSON.stringify({
    ...controlEnvelope("event", binding, { sourceSeq: seq }, randomUUID(), new Date().toISOString()),
    ...changes,
  });

describe("secure channel over WebSocket on 127.0.0.1", () => {
  let authority: MemoryAuthority;
  let server: TestServer;
  const opened: Array<{ close(): void }> = [];

  beforeEach(async () => {
    authority = new MemoryAuthority();
    server = await new TestServer(authority).start();
  });
  afterEach(async () => {
    for (const c of opened.splice(0)) c.close();
    await server.close();
  });

  it("bootstrap, then lease: sealed envelopes both ways, one lease minted, the ticket used", async () => {
    const token = authority.issueBootstrap();
    const runnerInbox = new Inbox();
    const runner = await connectRunner(server.url, { kind: "bootstrap", token }, runnerInbox);
    assert.ok(runner.ok, runner.ok ? "" : runner.error.message);
    opened.push(runner.value.channel);
    const core = await server.accepted();
    assert.ok(core.ok);
    assert.equal(core.value.channel.sessionId, runner.value.channel.sessionId);
    assert.equal(authority.record(token)?.used, true);
    const { welcome } = runner.value;
    assert.match(welcome.lease.token, /^lease_/);
    assert.equal(authority.record(welcome.lease.token)?.leaseId, welcome.lease.leaseId);
    assert.equal(welcome.payload.connectionLeaseToken, welcome.lease.token);

    assert.ok(runner.value.channel.send("event", { sourceSeq: 1 }).ok);
    assert.ok(runner.value.channel.send("pong", { lifecycle: "running", outboxBytes: 0, ackedSourceSeq: 0 }).ok);
    await server.inbox.until(() => server.inbox.envelopes.length === 2);
    assert.deepEqual(
      server.inbox.envelopes.map((e) => [e.kind, e.runId, e.connectionId, e.connectionLeaseId]),
      [
        ["event", IDENTITY.runId, "connection_1", welcome.lease.leaseId],
        ["pong", IDENTITY.runId, "connection_1", welcome.lease.leaseId],
      ],
    );
    assert.ok(core.value.channel.send("ack", { ackedSourceSeq: 1 }).ok);
    assert.ok(core.value.channel.send("ping", {}).ok);
    await runnerInbox.until(() => runnerInbox.envelopes.length === 2);
    assert.deepEqual(
      runnerInbox.envelopes.map((e) => [e.kind, e.payload]),
      [
        ["ack", { ackedSourceSeq: 1 }],
        ["ping", {}],
      ],
    );

    runner.value.channel.close();
    await server.inbox.until(() => server.inbox.closed !== undefined);
    assert.equal(runnerInbox.closed, null);
    assert.equal(server.inbox.closed?.code, "socket_closed");

    const again = await connectRunner(server.url, welcome.lease, new Inbox());
    assert.ok(again.ok, again.ok ? "" : again.error.message);
    opened.push(again.value.channel);
    assert.equal(again.value.welcome.binding.connectionId, "connection_2");
    assert.equal("connectionLeaseToken" in again.value.welcome.payload, false);
    assert.equal(again.value.welcome.payload.ackedSourceSeq, 3);
    assert.equal(again.value.welcome.lease.token, welcome.lease.token);
  });

  it("hands envelopes over in order, holding the next back while a handler works", async () => {
    const seen: number[] = [];
    let busy = false;
    const slow = new TestServer(authority, {
      handlers: {
        onEnvelope: async (e) => {
          assert.equal(busy, false);
          busy = true;
          await new Promise((r) => setTimeout(r, 2));
          seen.push(e.payload.sourceSeq as number);
          busy = false;
        },
        onClose: () => {},
      },
    });
    await slow.start();
    try {
      const runner = await connectRunner(
        slow.url,
        { kind: "bootstrap", token: authority.issueBootstrap() },
        new Inbox(),
      );
      assert.ok(runner.ok);
      opened.push(runner.value.channel);
      for (let seq = 1; seq <= 20; seq++) assert.ok(runner.value.channel.send("event", { sourceSeq: seq }).ok);
      while (seen.length < 20) await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual(
        seen,
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
    } finally {
      await slow.close();
    }
  });

  it("refuses a wrong client proof, closes, and leaves the ticket unused", async () => {
    const token = authority.issueBootstrap();
    const bad = await handRunner(server.url, token, "00".repeat(32));
    assert.equal(await bad.messages.closed, 1008);
    const result = await server.accepted();
    assert.equal(result.ok ? "" : result.error.code, "proof_mismatch");
    assert.equal(authority.authorizeCalls, 0);
    assert.equal(authority.record(token)?.used, false);
    const good = await connectRunner(server.url, { kind: "bootstrap", token }, new Inbox());
    assert.ok(good.ok, good.ok ? "" : `the ticket still works: ${good.error.message}`);
    opened.push(good.value.channel);
  });

  it("a runner refuses a wrong server proof", async () => {
    const token = authority.issueBootstrap();
    const record = authority.records.get(credentialId(token))!;
    const other = authKey("bootstrap_other");
    record.authKeyDigest = authKeyDigest(other);
    const runner = await connectRunner(server.url, { kind: "bootstrap", token }, new Inbox());
    assert.equal(runner.ok ? "" : runner.error.code, "proof_mismatch");
    const core = await server.accepted();
    assert.equal(core.ok ? "" : core.error.code, "socket_closed");
    assert.equal(record.used, false);
  });

  it("refuses a reused ticket, an expired ticket and a lease for another run", async () => {
    const token = authority.issueBootstrap();
    const first = await connectRunner(server.url, { kind: "bootstrap", token }, new Inbox());
    assert.ok(first.ok);
    opened.push(first.value.channel);
    const reused = await connectRunner(server.url, { kind: "bootstrap", token }, new Inbox());
    assert.equal(reused.ok ? "" : reused.error.code, "socket_closed");
    assert.match(reused.ok ? "" : reused.error.message, /1008 credential_used/);
    assert.equal((await server.accepted(2)).ok ? "" : "credential_used", "credential_used");

    const expired = authority.issueBootstrap(1);
    await new Promise((r) => setTimeout(r, 5));
    const late = await connectRunner(server.url, { kind: "bootstrap", token: expired }, new Inbox());
    assert.match(late.ok ? "" : late.error.message, /credential_expired/);

    const lease: RunnerCredential = {
      kind: "lease",
      token: "lease_other-run",
      leaseId: "lease-x",
      expiresAtUnixMs: Date.now() + 60_000,
      revocationEpoch: 0,
      protocolVersion: 3,
    };
    authority.store(lease.token, {
      kind: "lease",
      identity: { ...IDENTITY, runId: "run-2" },
      expiresAtUnixMs: lease.expiresAtUnixMs,
      used: false,
      revoked: false,
      leaseId: "lease-x",
      revocationEpoch: 0,
      protocolVersion: 3,
    });
    const foreign = await connectRunner(server.url, lease, new Inbox());
    assert.match(foreign.ok ? "" : foreign.error.message, /identity_mismatch/);
    const codes = server.results.filter((r) => !r.ok).map((r) => (r.ok ? "" : r.error.code));
    assert.deepEqual(codes, ["credential_used", "credential_expired", "identity_mismatch"]);
  });

  describe("after welcome, closes the connection with a typed diagnostic on", () => {
    const cases: Array<[string, string, number, (r: Awaited<ReturnType<typeof handRunner>>) => void]> = [
      ["a plaintext frame", "plaintext_frame", 1008, (r) => r.ws.send(event(r.binding!, 1))],
      [
        "a replayed frame",
        "frame_replayed",
        1008,
        (r) => {
          const frame = r.sealer!.seal(event(r.binding!, 1));
          assert.ok(frame.ok);
          r.ws.send(frame.value);
          r.ws.send(frame.value);
        },
      ],
      [
        "a reordered frame",
        "frame_gap",
        1008,
        (r) => {
          const first = r.sealer!.seal(event(r.binding!, 1));
          const second = r.sealer!.seal(event(r.binding!, 2));
          assert.ok(first.ok && second.ok);
          r.ws.send(second.value);
          r.ws.send(first.value);
        },
      ],
      [
        "a tampered frame",
        "tag_mismatch",
        1008,
        (r) => {
          const frame = r.sealer!.seal(event(r.binding!, 1));
          assert.ok(frame.ok);
          r.ws.send(
            frame.value.replace(/"ciphertext":"(.)/, (_m, c: string) => `"ciphertext":"${c === "0" ? "1" : "0"}`),
          );
        },
      ],
      [
        "one identity field changed on one envelope",
        "identity_mismatch",
        1008,
        (r) => {
          for (const text of [event(r.binding!, 1), event(r.binding!, 2, { turnId: "turn-2" })]) {
            const frame = r.sealer!.seal(text);
            assert.ok(frame.ok);
            r.ws.send(frame.value);
          }
        },
      ],
      [
        "a frame over 1 MiB",
        "frame_too_large",
        1009,
        (r) => {
          const frame = r.sealer!.seal(
            event(r.binding!, 1, { payload: { pad: "x".repeat(MAX_FRAME_BYTES) } } as Partial<ControlEnvelope>),
          );
          assert.ok(frame.ok);
          r.ws.send(frame.value);
        },
      ],
      ["a binary frame", "binary_frame", 1003, (r) => r.ws.send(Buffer.from("{}"))],
    ];
    for (const [what, code, closeCode, misbehave] of cases) {
      it(what, async () => {
        const r = await handRunner(server.url, authority.issueBootstrap());
        const core = await server.accepted();
        assert.ok(core.ok);
        misbehave(r);
        assert.equal(await r.messages.closed, closeCode);
        await server.inbox.until(() => server.inbox.closed !== undefined);
        assert.equal(server.inbox.closed?.code, code);
        assert.equal(core.value.channel.send("ack", { ackedSourceSeq: 0 }).ok, false, "a closed channel sends nothing");
      });
    }
  });

  it("refuses to seal a plaintext over 1 MiB but keeps the connection", async () => {
    const runnerInbox = new Inbox();
    const runner = await connectRunner(
      server.url,
      { kind: "bootstrap", token: authority.issueBootstrap() },
      runnerInbox,
    );
    assert.ok(runner.ok);
    opened.push(runner.value.channel);
    const big = runner.value.channel.send("event", { pad: "x".repeat(MAX_FRAME_BYTES) });
    assert.equal(big.ok ? "" : big.error.code, "frame_too_large");
    assert.equal(runner.value.channel.send("ack" as never, {}).ok, false, "a runner never sends ack");
    assert.ok(runner.value.channel.send("event", { sourceSeq: 1 }).ok);
    await server.inbox.until(() => server.inbox.envelopes.length === 1);
    assert.equal(runnerInbox.closed, undefined);
  });

  it("reports an authority hook that throws, and a grant without the lease token a bootstrap needs", async () => {
    const throwing = await new TestServer(authority, {
      authorize: () => {
        throw new Error("store offline");
      },
    }).start();
    const tokenless = await new TestServer(authority, {
      authorize: (request) => {
        const grant = authority.authorize(request);
        return grant.ok ? { ok: true, value: { ...grant.value, connectionLeaseToken: null } } : grant;
      },
    }).start();
    try {
      const a = await connectRunner(
        throwing.url,
        { kind: "bootstrap", token: authority.issueBootstrap() },
        new Inbox(),
      );
      assert.equal(a.ok, false);
      const ra = await throwing.accepted();
      assert.equal(ra.ok ? "" : ra.error.code, "handler_failed");
      const b = await connectRunner(
        tokenless.url,
        { kind: "bootstrap", token: authority.issueBootstrap() },
        new Inbox(),
      );
      assert.equal(b.ok, false);
      const rb = await tokenless.accepted();
      assert.equal(rb.ok ? "" : rb.error.code, "unauthorized");
    } finally {
      await throwing.close();
      await tokenless.close();
    }
  });
});
