import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket } from "ws";
import { AuthorityServer } from "../../src/authority/server.js";
import type { AuthorityServerOptions } from "../../src/authority/server-options.js";
import { ServerKey } from "../../src/authority/server-key.js";
import type { Diagnostic, RunSnapshot } from "../../src/authority/store.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { MAX_FRAME_BYTES } from "../../src/contract/versions.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import {
  DurableRunner,
  type DurableRunnerOptions,
  type DurableOutcome,
} from "../../src/runner/durable/durable-runner.js";
import {
  Opener,
  RunnerHandshake,
  Sealer,
  canonicalChallenge,
  controlEnvelope,
  credentialId,
  handshakeEnvelope,
  type AuthChallenge,
  type ControlEnvelope,
  type EnvelopeBinding,
  type Result,
  type RunIdentity,
  type RunnerCredential,
  type RunnerLease,
  type SessionKeys,
  type TransportError,
  type WelcomePayload,
} from "../../src/transport/index.js";
import { event as sampleEvent } from "../contract/samples.js";
import { connectRunner, RESUME, upgradeRequest } from "../transport/support.js";
import { until } from "../support/until.js";

/** The runner build the authority of these tests expects; every runner here reports it. */
export const BUILD = { version: "0.1.0-security", digest: `sha256:${"5e".repeat(32)}` };

export { until };

/**
 * A real `AuthorityServer` on 127.0.0.1 with its SQLite store in a private temporary
 * directory. Every event the authority commits is kept per run; `close()` stops the server,
 * closes the store and removes the directory.
 */
export class SecureAuthority {
  readonly committed = new Map<string, PrpEvent[]>();
  readonly log: string[] = [];
  private runs = 0;

  private constructor(
    readonly root: string,
    readonly server: AuthorityServer,
  ) {}

  /** `options` are laid over the server's (connection limits, heartbeat timers). */
  static async start(options: Partial<AuthorityServerOptions> = {}): Promise<SecureAuthority> {
    const root = mkdtempSync(join(tmpdir(), "prp-security-"));
    let self: SecureAuthority | null = null;
    const server = AuthorityServer.open({
      stateDir: join(root, "authority"),
      serverKey: ServerKey.generate(),
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      onCommittedEvent: (event, ctx) => {
        const list = self!.committed.get(ctx.runId) ?? [];
        list.push(event);
        self!.committed.set(ctx.runId, list);
      },
      log: (text) => self?.log.push(text),
      ...options,
    });
    self = new SecureAuthority(root, server);
    try {
      await server.listen(0);
    } catch (err) {
      await self.close();
      throw err;
    }
    return self;
  }

  /** A newly registered run with its own identity. */
  async newRun(): Promise<RunIdentity> {
    const n = `${++this.runs}_${randomUUID().slice(0, 8)}`;
    const identity: RunIdentity = {
      runnerInstanceId: `runner_${n}`,
      environmentLeaseId: `env_${n}`,
      runId: `run_${n}`,
      normalizedSessionId: `session_${n}`,
      turnId: `turn_${n}`,
      itemId: `item_${n}`,
    };
    const registered = await this.server.registerRun(identity);
    assert.ok(registered.ok, registered.ok ? "" : registered.error.message);
    return identity;
  }

  async ticket(runId: string, ttlMs?: number): Promise<string> {
    const issued = await this.server.issueBootstrapTicket(runId, ttlMs);
    assert.ok(issued.ok, issued.ok ? "" : issued.error.message);
    return issued.value.token;
  }

  url(runId: string): string {
    return this.server.connectUrl(runId);
  }

  get port(): number {
    return Number(new URL(this.server.connectUrl("x")).port);
  }

  async snapshot(runId: string): Promise<RunSnapshot> {
    const run = await this.server.run(runId);
    assert.ok(run, `run ${runId} is registered`);
    return run;
  }

  diagnostics(runId: string): Promise<Diagnostic[]> {
    return this.server.diagnostics(runId);
  }

  /** Waits for a diagnostic with this code on the run, beyond the first `after` ones. */
  async diagnosed(runId: string, code: string, after = 0): Promise<Diagnostic> {
    let found: Diagnostic | undefined;
    await until(
      async () => (found = (await this.diagnostics(runId)).slice(after).find((d) => d.code === code)) !== undefined,
      `diagnostic ${code} on ${runId}`,
    );
    return found!;
  }

  /** Whether the run's credential is still unused (a refused handshake must not consume it). */
  async ticketUnused(token: string): Promise<boolean> {
    const record = await this.server.credentials.lookupCredential(credentialId(token));
    return record !== undefined && !record.used && !record.revoked;
  }

  async close(): Promise<void> {
    try {
      await this.server.close();
    } finally {
      rmSync(this.root, { recursive: true, force: true });
    }
  }
}

/**
 * Asserts that a refusal changed nothing durable: the cursor and every counter are as before,
 * except the malformed-frame counter, which a refused frame may raise.
 */
export function assertIntact(after: RunSnapshot, before: RunSnapshot): void {
  assert.deepEqual({ ...after, malformedFrames: before.malformedFrames }, before);
  assert.ok(after.malformedFrames >= before.malformedFrames);
}

/** A v1 PRP event of the run, as its runner would send it (an item.delta, P2). */
export const prpEvent = (
  identity: RunIdentity,
  seq: number,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> =>
  sampleEvent(1, {
    sourceEventId: `event_${identity.runnerInstanceId}_${String(seq).padStart(16, "0")}`,
    sourceSeq: seq,
    sourceInstanceId: identity.runnerInstanceId,
    runId: identity.runId,
    normalizedSessionId: identity.normalizedSessionId,
    turnId: identity.turnId,
    itemId: identity.itemId,
    payload: { text: `delta ${seq}` },
    ...overrides,
  });

/** Text messages and the close of a plain `ws` client, none lost between awaits. */
class Messages {
  private readonly queue: string[] = [];
  private wake: (() => void) | null = null;
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.queue.push(data.toString("utf8"));
      this.wake?.();
    });
    ws.on("error", () => {});
    this.closed = new Promise((resolve) =>
      ws.on("close", (code: number, reason: Buffer) => {
        resolve({ code, reason: reason.toString("utf8") });
        this.wake?.();
      }),
    );
  }

  async next(): Promise<string> {
    while (this.queue.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.queue.shift()!;
  }
}

export interface HandSession {
  binding: EnvelopeBinding;
  welcome: WelcomePayload;
  lease: RunnerLease;
  keys: SessionKeys;
}

/**
 * A runner assembled from src/transport's pure pieces over a plain `ws` client, so that a test
 * can send what the real channel never would, sealed with the real session keys. Its sealer
 * allows frames up to 4 MiB, to show the receiver's own limit.
 */
export class HandRunner {
  private sealer: Sealer | null = null;
  private opener: Opener | null = null;
  session: HandSession | null = null;

  private constructor(
    readonly ws: WebSocket,
    readonly messages: Messages,
    readonly identity: RunIdentity,
  ) {}

  static async dial(url: string, identity: RunIdentity): Promise<HandRunner> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const messages = new Messages(ws);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    return new HandRunner(ws, messages, identity);
  }

  /** Hello, challenge, response, sealed welcome: the whole handshake with a good credential. */
  async authenticate(credential: RunnerCredential): Promise<HandSession> {
    const handshake = new RunnerHandshake({
      credential,
      identity: this.identity,
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      resume: RESUME,
    });
    this.sendJson(handshakeEnvelope("auth_hello", { ...handshake.hello }));
    const challenge = JSON.parse(await this.messages.next());
    const answered = handshake.answer(challenge.payload, Date.now());
    assert.ok(answered.ok, answered.ok ? "" : answered.error.message);
    const { keys, response } = answered.value;
    this.sendJson(handshakeEnvelope("auth_response", { ...response }));
    // Copies: the Sealer and Opener zero the keys they own when destroyed.
    this.opener = new Opener(Buffer.from(keys.coreToClient), keys.sessionId, "core_to_client");
    const opened = this.opener.open(await this.messages.next());
    assert.ok(opened.ok, opened.ok ? "" : opened.error.message);
    const welcome = handshake.acceptWelcome(JSON.parse(opened.value), Date.now());
    assert.ok(welcome.ok, welcome.ok ? "" : welcome.error.message);
    this.sealer = new Sealer(Buffer.from(keys.clientToCore), keys.sessionId, "client_to_core", 4 * MAX_FRAME_BYTES);
    this.session = { binding: welcome.value.binding, welcome: welcome.value.payload, lease: welcome.value.lease, keys };
    return this.session;
  }

  sendJson(value: unknown): void {
    this.ws.send(JSON.stringify(value));
  }

  /** The text of a control envelope of this session; `changes` are laid over it before sealing. */
  envelopeText(
    kind: ControlEnvelope["kind"],
    payload: Record<string, unknown>,
    changes: Record<string, unknown> = {},
  ): string {
    assert.ok(this.session, "authenticate first");
    return JSON.stringify({
      ...controlEnvelope(kind, this.session.binding, payload, randomUUID(), new Date().toISOString()),
      ...changes,
    });
  }

  /** A sealed frame under the next counter (not sent). */
  seal(text: string): string {
    assert.ok(this.sealer, "authenticate first");
    const sealed = this.sealer.seal(text);
    assert.ok(sealed.ok, sealed.ok ? "" : sealed.error.message);
    return sealed.value;
  }

  sendEvent(seq: number, changes: Record<string, unknown> = {}): string {
    const frame = this.seal(this.envelopeText("event", { event: prpEvent(this.identity, seq) }, changes));
    this.ws.send(frame);
    return frame;
  }

  /** The next sealed envelope from the core, opened. */
  async receive(): Promise<ControlEnvelope> {
    assert.ok(this.opener, "authenticate first");
    const opened = this.opener.open(await this.messages.next());
    assert.ok(opened.ok, opened.ok ? "" : opened.error.message);
    return JSON.parse(opened.value) as ControlEnvelope;
  }

  /** Reads envelopes until an ack of `seq`; returns every envelope read. */
  async ackOf(seq: number): Promise<ControlEnvelope[]> {
    const seen: ControlEnvelope[] = [];
    for (;;) {
      const envelope = await this.receive();
      seen.push(envelope);
      if (envelope.kind === "ack" && envelope.payload.ackedSourceSeq === seq) return seen;
    }
  }

  close(): void {
    this.sealer?.destroy();
    this.opener?.destroy();
    this.ws.close();
  }

  /** Waits for the close and returns it; ends the socket if the peer does not. */
  closed(): Promise<{ code: number; reason: string }> {
    return this.messages.closed;
  }
}

/** A hello for the ticket, then, to its challenge, a response carrying `proof(challenge)`; resolves with the close. */
export async function answerWithProof(
  authority: SecureAuthority,
  identity: RunIdentity,
  ticket: string,
  proof: (challenge: AuthChallenge, canonical: string) => string,
) {
  const runner = await HandRunner.dial(authority.url(identity.runId), identity);
  try {
    const handshake = new RunnerHandshake({
      credential: { kind: "bootstrap", token: ticket },
      identity,
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      resume: RESUME,
    });
    const hello = handshake.hello;
    handshake.destroy();
    runner.sendJson(handshakeEnvelope("auth_hello", { ...hello }));
    const challenge = JSON.parse(await runner.messages.next()).payload as AuthChallenge;
    assert.equal(challenge.credentialId, credentialId(ticket), "the ticket was found: the refusal is the proof's");
    runner.sendJson(
      handshakeEnvelope("auth_response", {
        credentialId: hello.credentialId,
        clientNonce: hello.clientNonce,
        serverNonce: challenge.serverNonce,
        clientProof: proof(challenge, canonicalChallenge(challenge)),
      }),
    );
    return await runner.closed();
  } finally {
    runner.close();
  }
}

/** The real runner's way in (URL rules, loopback resolution, dial, handshake), for refusals. */
export async function realRunner(
  url: string,
  identity: RunIdentity,
  credential: RunnerCredential,
): Promise<Result<{ close(): void; lease: RunnerLease }>> {
  const opened = await connectRunner(
    url,
    credential,
    { onEnvelope: () => {}, onClose: () => {} },
    { identity, runnerVersion: BUILD.version, runnerDigest: BUILD.digest },
  );
  if (!opened.ok) return opened;
  return { ok: true, value: { close: () => opened.value.channel.close(), lease: opened.value.welcome.lease } };
}

export const refusalOf = (result: Result<unknown>): TransportError | null => (result.ok ? null : result.error);

/**
 * The authenticated runner finishes its run with a credential it legitimately holds (its
 * lease): resends from the welcome's cursor up to `lastSeq`, answers the pending command, and
 * leaves the run's cursor at `lastSeq` with the command's result recorded.
 */
export async function finishWithLease(
  authority: SecureAuthority,
  identity: RunIdentity,
  lease: RunnerLease,
  lastSeq: number,
): Promise<void> {
  const runner = await HandRunner.dial(authority.url(identity.runId), identity);
  try {
    const session = await runner.authenticate(lease);
    for (let seq = session.welcome.ackedSourceSeq + 1; seq <= lastSeq; seq++) runner.sendEvent(seq);
    if (session.welcome.ackedSourceSeq < lastSeq) await runner.ackOf(lastSeq);
    for (const command of session.welcome.pendingCommands as Array<{ commandId: string }>) {
      runner.ws.send(
        runner.seal(
          runner.envelopeText("command_result", {
            commandId: command.commandId,
            status: "completed",
            result: { logicalEffectCount: 1 },
          }),
        ),
      );
    }
    await until(async () => (await authority.snapshot(identity.runId)).ackedSourceSeq === lastSeq, "the cursor");
    await until(
      async () => (await authority.server.commands.commands(identity.runId)).every((c) => c.status === "completed"),
      "every command completed",
    );
  } finally {
    runner.close();
    await runner.closed();
  }
}

/**
 * A real durable runner (src/runner/durable, in this process) runs a whole happy-path run
 * against the authority with `ticket`: the fake harness is started on run.prepare, and the
 * runner ends once run.terminal is acknowledged. Returns its outcome and the run's events.
 */
export async function completeRun(
  authority: SecureAuthority,
  identity: RunIdentity,
  ticket: string,
): Promise<{ outcome: DurableOutcome; events: PrpEvent[]; log: string[] }> {
  const { runner, log } = await durableRunner(authority, identity, { bootstrapToken: ticket });
  const outcome = await runner.run();
  return { outcome, events: authority.committed.get(identity.runId) ?? [], log };
}

/**
 * Queues the three opening commands of a run and builds a real durable runner for it (in this
 * process) with a fresh ticket and the happy-path fake harness, unless `options` says otherwise.
 * The runner's stderr lines are collected in `log`.
 */
export async function durableRunner(
  authority: SecureAuthority,
  identity: RunIdentity,
  options: Partial<DurableRunnerOptions> = {},
): Promise<{ runner: DurableRunner; log: string[]; stateDir: string }> {
  await queueOpeningCommands(authority.server, identity);
  return unqueuedRunner(authority, identity, options);
}

/** run.prepare, session.open and turn.start, queued through `server`. */
export async function queueOpeningCommands(server: AuthorityServer, identity: RunIdentity): Promise<void> {
  for (const [type, payload] of [
    ["run.prepare", { workspace: "security" }],
    ["session.open", { reuse: "new_per_run" }],
    ["turn.start", { text: "Play the script.", turnId: identity.turnId }],
  ] as const) {
    const queued = await server.queueCommand(identity.runId, type, payload);
    assert.ok(queued.ok, queued.ok ? "" : queued.error.message);
  }
}

/** As durableRunner, with no command queued: the test queues them (through another instance, say). */
export async function unqueuedRunner(
  authority: SecureAuthority,
  identity: RunIdentity,
  options: Partial<DurableRunnerOptions> = {},
): Promise<{ runner: DurableRunner; log: string[]; stateDir: string }> {
  const { runId } = identity;
  const log: string[] = [];
  const stateDir = join(authority.root, "runners", runId);
  const runner = new DurableRunner({
    identity,
    connectUrl: authority.url(runId),
    stateDir,
    bootstrapToken: options.bootstrapToken ?? (await authority.ticket(runId)),
    runnerVersion: BUILD.version,
    runnerDigest: BUILD.digest,
    reconnectDelayMs: 50,
    driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath("happy-path"), delayMs: 0 }),
    log: (text) => log.push(text),
    ...options,
  });
  return { runner, log, stateDir };
}

/** Asserts a completed run: delivered, every event committed once in order, terminal succeeded. */
export async function assertCompleted(
  authority: SecureAuthority,
  identity: RunIdentity,
  done: Awaited<ReturnType<typeof completeRun>>,
  firstSeq = 1,
): Promise<void> {
  assert.deepEqual(done.outcome, { code: 0, reason: "run_delivered" }, done.log.join("\n"));
  const run = await authority.snapshot(identity.runId);
  const seqs = done.events.map((e) => e.sourceSeq);
  assert.deepEqual(
    seqs,
    Array.from({ length: seqs.length }, (_, i) => firstSeq + i),
  );
  assert.equal(run.ackedSourceSeq, seqs.at(-1));
  const terminal = done.events.at(-1)!;
  assert.equal(terminal.eventType, "run.terminal");
  assert.equal((terminal.payload as { runTerminalState?: string }).runTerminalState, "succeeded");
}

/**
 * A WebSocket client written by hand over a raw TCP socket to 127.0.0.1, so that it can send
 * frames `ws` never would (unmasked ones). Reads the server's (unmasked) frames itself.
 */
export class RawWsClient {
  private buffer = Buffer.alloc(0);
  private upgraded = false;
  private readonly texts: string[] = [];
  private wake: (() => void) | null = null;
  closeCode: number | null = null;
  readonly ended: Promise<void>;
  status = "";

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", () => {});
    this.ended = new Promise((resolve) =>
      socket.on("close", () => {
        resolve();
        this.wake?.();
      }),
    );
  }

  /**
   * Connects (from `localAddress`, another loopback address for another peer) and sends the
   * upgrade request (with `extraHeaders`); resolves once the server answered.
   */
  static async upgrade(
    port: number,
    path: string,
    extraHeaders: string[] = [],
    localAddress = "127.0.0.1",
  ): Promise<RawWsClient> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ port, host: "127.0.0.1", localAddress }, () => resolve(s));
      s.once("error", reject);
    });
    const client = new RawWsClient(socket);
    socket.write(upgradeRequest(path, extraHeaders));
    await until(() => client.status !== "" || socket.destroyed, "the upgrade response");
    return client;
  }

  get accepted(): boolean {
    return this.status.startsWith("HTTP/1.1 101");
  }

  /** A text frame, masked as RFC 6455 requires of a client, or not. */
  sendText(text: string, masked = true): void {
    const payload = Buffer.from(text, "utf8");
    const mask = masked ? Buffer.from([0x37, 0xfa, 0x21, 0x3d]) : null;
    const bit = masked ? 0x80 : 0;
    let header: Buffer;
    if (payload.length < 126) header = Buffer.from([0x81, bit | payload.length]);
    else if (payload.length < 65_536)
      header = Buffer.from([0x81, bit | 126, payload.length >> 8, payload.length & 0xff]);
    else {
      header = Buffer.alloc(10);
      header[0] = 0x81;
      header[1] = bit | 127;
      header.writeBigUInt64BE(BigInt(payload.length), 2);
    }
    this.socket.write(
      Buffer.concat([header, ...(mask ? [mask, Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!))] : [payload])]),
    );
  }

  async next(): Promise<string> {
    while (this.texts.length === 0) {
      if (this.socket.destroyed || this.closeCode !== null)
        throw new Error(`the connection closed (${this.closeCode})`);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
    return this.texts.shift()!;
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    if (!this.upgraded) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      this.status = this.buffer.subarray(0, end).toString("latin1").split("\r\n")[0]!;
      this.upgraded = this.accepted;
      this.buffer = this.buffer.subarray(end + 4);
      if (!this.upgraded) return;
    }
    for (;;) {
      if (this.buffer.length < 2) break;
      const opcode = this.buffer[0]! & 0x0f;
      let length = this.buffer[1]! & 0x7f;
      let at = 2;
      if (length === 126) {
        if (this.buffer.length < 4) break;
        length = this.buffer.readUInt16BE(2);
        at = 4;
      } else if (length === 127) {
        if (this.buffer.length < 10) break;
        length = Number(this.buffer.readBigUInt64BE(2));
        at = 10;
      }
      if (this.buffer.length < at + length) break;
      const payload = this.buffer.subarray(at, at + length);
      this.buffer = this.buffer.subarray(at + length);
      if (opcode === 0x1) this.texts.push(payload.toString("utf8"));
      if (opcode === 0x8) {
        this.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        // Answer the close as a client must (masked), then let the server end the connection.
        if (this.socket.writable)
          this.socket.write(Buffer.from([0x88, 0x82, 0, 0, 0, 0, payload[0] ?? 0x03, payload[1] ?? 0xe8]));
      }
    }
    this.wake?.();
  }
}
