import { randomUUID } from "node:crypto";
import type { WebSocket } from "ws";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import type { SessionKeys } from "./derive.js";
import {
  CORE_TO_RUNNER_KINDS,
  RUNNER_TO_CORE_KINDS,
  checkControlEnvelope,
  checkHandshakeEnvelope,
  controlEnvelope,
  handshakeEnvelope,
  parseFrameText,
  type ControlEnvelope,
  type ControlKind,
  type CoreToRunnerKind,
  type EnvelopeBinding,
  type EnvelopeSender,
  type HandshakeKind,
  type Payload,
  type RunnerToCoreKind,
} from "./envelope.js";
import {
  EnvelopeRefusal,
  fail,
  ok,
  transportError,
  type Result,
  type TransportError,
  type TransportErrorCode,
} from "./errors.js";
import { FrameReader } from "./frame-reader.js";
import { Heartbeat, type HeartbeatOptions } from "./heartbeat.js";
import { parseHello, type AuthChallenge, type AuthHello } from "./handshake-payloads.js";
import {
  RunnerHandshake,
  ServerHandshake,
  type CredentialRecord,
  type LeaseGrant,
  type RunExpectation,
  type RunnerHandshakeOptions,
  type RunnerWelcome,
} from "./handshake.js";
import { AUTH_MESSAGE_TIMEOUT_MS, CLOSE_GRACE_MS, HEARTBEAT_INTERVAL_MS } from "./limits.js";
import { Opener, Sealer, maxSecureFrameBytes } from "./secure-frame.js";

export interface ChannelHandlers {
  /** An opened and checked envelope. A returned promise holds the next one back until it settles. */
  onEnvelope(envelope: ControlEnvelope): void | Promise<void>;
  /** Called once, when the channel ends: null after close(), otherwise why it was closed. */
  onClose(diagnostic: TransportError | null): void;
}

interface ChannelOptions {
  handlers: ChannelHandlers;
  /** The clock for lease expiry and `sentAt`; tests fix it. */
  now?: () => number;
  /** Dead-peer detection: its timeout and its own timers (apart from the lease clock). */
  heartbeat?: HeartbeatOptions;
  authTimeoutMs?: number;
  maxFrameBytes?: number;
}

/** RFC 6455 close codes per refusal: 1009 too big, 1003 wrong data type, 1002 broken framing, else 1008 policy. */
const CLOSE_CODES: Partial<Record<TransportErrorCode, number>> = {
  frame_too_large: 1009,
  binary_frame: 1003,
  websocket_protocol_error: 1002,
  unmasked_frame: 1002,
};

/** Closes the socket for a refusal; the reason is a code alone (the handler's own, or the error's), which carries no secret. */
function closeFor(ws: WebSocket, error: TransportError, reason: string = error.code): void {
  if (error.code === "socket_closed") return;
  closeSocket(ws, CLOSE_CODES[error.code] ?? 1008, reason);
}

/**
 * Sends the close frame, and ends the socket if the peer has not answered it within the grace:
 * ws waits 30 s for a peer that stopped reading (a stalled or vanished runner) and holds the
 * socket all that time.
 */
function closeSocket(ws: WebSocket, code: number, reason: string): void {
  ws.close(code, reason);
  const timer = setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
  timer.unref();
  ws.once("close", () => clearTimeout(timer));
}

/** What already-read frames may hold while the socket is paused: one read plus one whole frame. */
const queueLimit = (maxFrameBytes: number): number => 2 * maxSecureFrameBytes(maxFrameBytes);

/**
 * What the core holds unsent for a runner that does not read: four whole frames, over the
 * kernel's buffers. The core sends one command at a time and an ACK per commit, so a reading
 * runner never comes near it; one that sends events and reads nothing would otherwise make the
 * core buffer an ACK per commit for as long as it keeps sending (the heartbeat hears it, so it
 * is never silent). The runner has no such limit: what it sends is its outbox, already bounded.
 */
export const coreUnsentLimit = (maxFrameBytes: number): number => 4 * maxSecureFrameBytes(maxFrameBytes);

/** The heartbeat of one side: the welcome's interval, and what this side sends on each beat. */
interface HeartbeatPlan<Send extends ControlKind> {
  intervalMs: number;
  beat: ((channel: SecureChannel<Send>) => void) | null;
  options: HeartbeatOptions;
}

/**
 * One authenticated connection after welcome: seals what this side sends, opens, checks and
 * hands over what the peer sends, in order. Any refused frame closes the socket and ends the
 * channel with the diagnostic; a plaintext refused before sealing (too large) is only returned.
 * A peer silent past the heartbeat's limit ends it as `peer_silent`.
 */
export class SecureChannel<Send extends ControlKind = ControlKind> {
  private closed = false;
  private readonly heartbeat: Heartbeat;

  constructor(
    private readonly ws: WebSocket,
    private readonly reader: FrameReader,
    private readonly sealer: Sealer,
    private readonly opener: Opener,
    readonly sessionId: string,
    readonly binding: EnvelopeBinding,
    private readonly sendKinds: readonly Send[],
    private readonly receiveFrom: Exclude<EnvelopeSender, "welcome">,
    private readonly handlers: ChannelHandlers,
    private readonly now: () => number,
    heartbeat: HeartbeatPlan<Send>,
    /** Bytes this side may hold unsent (ws's buffer and the socket's) before it ends `send_overflow`. */
    private readonly maxUnsentBytes = Infinity,
  ) {
    const beat = heartbeat.beat;
    this.heartbeat = new Heartbeat(heartbeat.intervalMs, heartbeat.options, beat && (() => beat(this)), (silent) =>
      this.end(silent),
    );
    // Liveness is the transport's (RFC 6455 §5.5.2): ws answers a ping with a pong as it parses
    // it, which it does only while this side reads, so a stopped or partitioned peer is silent.
    const alive = () => this.heartbeat.alive();
    ws.on("ping", alive);
    ws.on("pong", alive);
    // The first frame waits a turn of the event loop: whoever opened the channel has then taken
    // it (the authority records the live connection) before any handler runs.
    setImmediate(() => reader.deliver((frame) => this.take(frame)));
  }

  send(kind: Send, payload: Payload): Result<ControlEnvelope> {
    if (this.closed) return fail("socket_closed", "", "the channel is closed");
    if (!this.sendKinds.includes(kind)) return fail("unknown_kind", "/kind", `this side does not send ${kind}`);
    const envelope = controlEnvelope(kind, this.binding, payload, randomUUID(), new Date(this.now()).toISOString());
    let text: string;
    try {
      text = JSON.stringify(envelope);
    } catch (err) {
      return fail("malformed_envelope", "/payload", `the payload is not JSON data: ${(err as Error).message}`);
    }
    const sealed = this.sealer.sealFrame(text);
    if (!sealed.ok) return sealed;
    this.transmit(sealed.value);
    return ok(envelope);
  }

  /**
   * The core's beat: a WebSocket ping, not a sealed `ping` envelope. An idle connection then
   * costs the authority a frame of a few bytes each way per interval, with no cipher, JSON or
   * envelope (bench:idle: about a sixth of a sealed beat's CPU). It needs no key to prove
   * anything, because every envelope and each lease renewal already does; TLS protects it as it
   * does the rest.
   */
  ping(): void {
    if (!this.closed) this.ws.ping();
  }

  /**
   * Sends an envelope whose payload is `{<member>: <json>}`, with `json` already serialised
   * (an outbox row): it is spliced in as it is, so an event is serialised once, when it is
   * committed, and its bytes on the wire are the committed bytes.
   */
  sendSerialized(kind: Send, member: string, json: string): Result<void> {
    if (this.closed) return fail("socket_closed", "", "the channel is closed");
    if (!this.sendKinds.includes(kind)) return fail("unknown_kind", "/kind", `this side does not send ${kind}`);
    const head = JSON.stringify(
      controlEnvelope(kind, this.binding, {}, randomUUID(), new Date(this.now()).toISOString()),
    );
    // controlEnvelope puts payload last: `…"payload":{}}` becomes `…"payload":{"member":json}}`.
    const sealed = this.sealer.sealFrame(`${head.slice(0, -2)}${JSON.stringify(member)}:${json}}}`);
    if (!sealed.ok) return sealed;
    this.transmit(sealed.value);
    return ok(undefined);
  }

  /** A sealed frame's bytes, sent as the text frame they are (ASCII), with no copy into a Buffer. */
  private transmit(sealed: Buffer): void {
    this.heartbeat.sent();
    this.ws.send(sealed, { binary: false }, (err) => {
      // Refused because the socket is already closing: the close that follows ends the channel
      // with what the peer said (its refusal code), which this error would hide.
      if (err && this.ws.readyState === this.ws.OPEN) this.end(transportError("socket_closed", "", err.message));
    });
    const unsent = this.ws.bufferedAmount;
    if (unsent > this.maxUnsentBytes)
      this.end(
        transportError(
          "send_overflow",
          "",
          `${unsent} bytes wait unsent, over the limit of ${this.maxUnsentBytes}: the peer does not read`,
        ),
      );
  }

  /**
   * The lease was renewed (§5.9): envelopes are acted on until the new expiry. An expiry never
   * moves back, so a late or repeated answer cannot shorten the connection.
   */
  renewLease(expiresAtUnixMs: number): void {
    this.binding.leaseExpiresAtUnixMs = Math.max(this.binding.leaseExpiresAtUnixMs, expiresAtUnixMs);
  }

  /**
   * Closes for a refusal of this side's own making (a renewal refused, an event whose commit
   * failed after its handler returned); onClose gets it. `reason` is the close frame's (the
   * error's code by default), as a handler's EnvelopeRefusal names its own code.
   */
  abort(error: TransportError, reason?: string): void {
    this.end(error, reason);
  }

  /** A normal close (1000), or 1001 "going away" with the `reason` the peer reads; onClose gets null. */
  close(reason?: string): void {
    if (this.closed) return;
    this.closed = true; // first: ending the reader hands its end to take(), which must find the channel closed
    this.reader.end(transportError("socket_closed", "", "closed by this side"));
    closeSocket(this.ws, reason === undefined ? 1000 : 1001, reason ?? "closed");
    this.finish(null);
  }

  private end(error: TransportError, reason?: string): void {
    if (this.closed) return;
    this.closed = true; // first, as in close(): the first diagnostic is the one the peer reads
    this.reader.end(error);
    closeFor(this.ws, error, reason);
    this.finish(error);
  }

  private finish(diagnostic: TransportError | null): void {
    this.heartbeat.stop();
    this.sealer.destroy();
    this.opener.destroy();
    this.handlers.onClose(diagnostic);
  }

  /** One frame from the reader: opened, checked and handed to the handler, or the channel's end. */
  private take(frame: Result<Buffer>): void | Promise<void> {
    if (this.closed) return;
    if (!frame.ok) return this.end(frame.error);
    this.heartbeat.heard();
    const opened = this.opener.open(frame.value);
    if (!opened.ok) return this.end(opened.error);
    const value = parseFrameText(opened.value);
    if (!value.ok) return this.end(value.error);
    const envelope = checkControlEnvelope(value.value, this.binding, this.receiveFrom, this.now());
    if (!envelope.ok) return this.end(envelope.error);
    let handled: void | Promise<void>;
    try {
      handled = this.handlers.onEnvelope(envelope.value);
    } catch (err) {
      return this.handlerFailed(err);
    }
    if (!handled) return this.heartbeat.reading();
    return handled.then(
      () => this.heartbeat.reading(),
      (err: unknown) => this.handlerFailed(err),
    );
  }

  private handlerFailed(err: unknown): void {
    this.end(
      transportError("handler_failed", "", `the envelope handler failed: ${(err as Error).message}`),
      err instanceof EnvelopeRefusal ? err.code : undefined,
    );
  }
}

function sendText(ws: WebSocket, text: string, timeoutMs: number): Promise<Result<void>> {
  return new Promise((resolve) => {
    const timer = setTimeout(
      () => resolve(fail("auth_timeout", "", `a handshake message was not written within ${timeoutMs} ms`)),
      timeoutMs,
    );
    ws.send(text, (err) => {
      clearTimeout(timer);
      resolve(err ? fail("socket_closed", "", err.message) : ok(undefined));
    });
  });
}

async function readHandshake(
  reader: FrameReader,
  kind: HandshakeKind,
  timeoutMs: number,
  maxFrameBytes: number,
): Promise<Result<Payload>> {
  const text = await reader.next(timeoutMs);
  if (!text.ok) return text;
  const value = parseFrameText(text.value, maxFrameBytes);
  return value.ok ? checkHandshakeEnvelope(value.value, kind) : value;
}

/** A handshake that failed: the socket is closed for it and the keys made so far are zeroed. */
function abort(ws: WebSocket, reader: FrameReader, error: TransportError, keys: SessionKeys | null): Result<never> {
  reader.end(error);
  closeFor(ws, error);
  keys?.clientToCore.fill(0);
  keys?.coreToClient.fill(0);
  return { ok: false, error };
}

export interface RunnerChannelOptions extends RunnerHandshakeOptions, ChannelOptions {}

/**
 * The runner's side over an open WebSocket (from `dial`): hello, challenge, response, sealed
 * welcome. On success the channel sends event, command_result, pong and lease_renew, and hands
 * over what the core sends; a core silent past the heartbeat's limit closes it. On failure the
 * socket is closed and the refusal returned.
 */
export async function openRunnerChannel(
  ws: WebSocket,
  options: RunnerChannelOptions,
): Promise<Result<{ channel: SecureChannel<RunnerToCoreKind>; welcome: RunnerWelcome }>> {
  const now = options.now ?? Date.now;
  const timeoutMs = options.authTimeoutMs ?? AUTH_MESSAGE_TIMEOUT_MS;
  const maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  const reader = new FrameReader(ws, queueLimit(maxFrameBytes));
  const handshake = new RunnerHandshake(options);
  let keys: SessionKeys | null = null;
  try {
    const hello = await sendText(
      ws,
      JSON.stringify(handshakeEnvelope("auth_hello", { ...handshake.hello })),
      timeoutMs,
    );
    if (!hello.ok) return abort(ws, reader, hello.error, keys);
    const challenge = await readHandshake(reader, "auth_challenge", timeoutMs, maxFrameBytes);
    if (!challenge.ok) return abort(ws, reader, challenge.error, keys);
    const answered = handshake.answer(challenge.value, now());
    if (!answered.ok) return abort(ws, reader, answered.error, keys);
    keys = answered.value.keys;
    const response = await sendText(
      ws,
      JSON.stringify(handshakeEnvelope("auth_response", { ...answered.value.response })),
      timeoutMs,
    );
    if (!response.ok) return abort(ws, reader, response.error, keys);
    const opener = new Opener(keys.coreToClient, keys.sessionId, "core_to_client", maxFrameBytes);
    const sealed = await reader.next(timeoutMs);
    const opened = sealed.ok ? opener.open(sealed.value) : sealed;
    const value = opened.ok ? parseFrameText(opened.value, maxFrameBytes) : opened;
    const welcome = value.ok ? handshake.acceptWelcome(value.value, now()) : value;
    if (!welcome.ok) return abort(ws, reader, welcome.error, keys);
    // Send no frame larger than either side accepts.
    const sealer = new Sealer(
      keys.clientToCore,
      keys.sessionId,
      "client_to_core",
      Math.min(maxFrameBytes, welcome.value.payload.maxFrameBytes),
    );
    const heartbeat = {
      intervalMs: welcome.value.payload.heartbeatIntervalMs,
      beat: null,
      options: options.heartbeat ?? {},
    };
    const channel = new SecureChannel(
      ws,
      reader,
      sealer,
      opener,
      keys.sessionId,
      welcome.value.binding,
      RUNNER_TO_CORE_KINDS,
      "core",
      options.handlers,
      now,
      heartbeat,
    );
    return ok({ channel, welcome: welcome.value });
  } finally {
    handshake.destroy();
  }
}

/** What the authority is asked once the client proof verified (§5.3 step 6). */
export interface AuthorizeRequest {
  hello: AuthHello;
  /** The record as read for the challenge: the authority re-reads it and requires it unchanged. */
  record: CredentialRecord;
  challenge: AuthChallenge;
  sessionId: string;
}

export interface CoreChannelOptions extends ChannelOptions {
  expected: RunExpectation;
  /** What the welcome carries and this side pings at (default HEARTBEAT_INTERVAL_MS); the caller checks its bounds. */
  heartbeatIntervalMs?: number;
  /** Bytes held unsent for a runner that does not read before the channel ends `send_overflow` (default coreUnsentLimit). */
  maxUnsentBytes?: number;
  /** The ticket or lease record for a credential id (the authority's storage). */
  lookupCredential(credentialId: string): Promise<CredentialRecord | undefined> | CredentialRecord | undefined;
  /**
   * Step 6, atomically in the authority: re-read the record (unchanged, unexpired), mark a
   * bootstrap ticket used and mint its lease, close every other connection of the run, and
   * return the grant the welcome carries. Called only after the client proof verified, so a
   * wrong proof never consumes a ticket.
   */
  authorize(request: AuthorizeRequest): Promise<Result<LeaseGrant>> | Result<LeaseGrant>;
}

async function callHook<T>(hook: () => Promise<T> | T): Promise<Result<T>> {
  try {
    return ok(await hook());
  } catch (err) {
    return fail("handler_failed", "", `an authority hook failed: ${(err as Error).message}`);
  }
}

/**
 * The core's side over an upgraded WebSocket (from the upgrade server): hello checks, challenge,
 * response proof, the authority's authorize hook, sealed welcome. On success the channel sends
 * ack, command, revoke, command_result_ack and lease_renewed, and a ping every heartbeat
 * interval; a runner silent past the heartbeat's limit closes it. On failure the socket is
 * closed and the refusal returned, for the authority's diagnostics.
 */
export async function acceptCoreChannel(
  ws: WebSocket,
  options: CoreChannelOptions,
): Promise<
  Result<{ channel: SecureChannel<Exclude<CoreToRunnerKind, "welcome">>; hello: AuthHello; grant: LeaseGrant }>
> {
  const now = options.now ?? Date.now;
  const timeoutMs = options.authTimeoutMs ?? AUTH_MESSAGE_TIMEOUT_MS;
  const maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  const intervalMs = options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS;
  const reader = new FrameReader(ws, queueLimit(maxFrameBytes));
  let handshake: ServerHandshake | null = null;
  let keys: SessionKeys | null = null;
  try {
    const helloPayload = await readHandshake(reader, "auth_hello", timeoutMs, maxFrameBytes);
    const hello = helloPayload.ok ? parseHello(helloPayload.value) : helloPayload;
    if (!hello.ok) return abort(ws, reader, hello.error, keys);
    const record = await callHook(() => options.lookupCredential(hello.value.credentialId));
    if (!record.ok) return abort(ws, reader, record.error, keys);
    const challenged = ServerHandshake.challenge(hello.value, record.value, options.expected, now());
    if (!challenged.ok) return abort(ws, reader, challenged.error, keys);
    handshake = challenged.value;
    const sent = await sendText(
      ws,
      JSON.stringify(handshakeEnvelope("auth_challenge", { ...handshake.challenge })),
      timeoutMs,
    );
    if (!sent.ok) return abort(ws, reader, sent.error, keys);
    const responsePayload = await readHandshake(reader, "auth_response", timeoutMs, maxFrameBytes);
    const verified = responsePayload.ok ? handshake.verify(responsePayload.value, now()) : responsePayload;
    if (!verified.ok) return abort(ws, reader, verified.error, keys);
    keys = verified.value.keys;
    const sessionId = keys.sessionId;
    const authorized = await callHook(() =>
      options.authorize({ hello: hello.value, record: handshake!.record, challenge: handshake!.challenge, sessionId }),
    );
    const grant = authorized.ok ? authorized.value : authorized;
    if (!grant.ok) return abort(ws, reader, grant.error, keys);
    if ((hello.value.credentialKind === "bootstrap") !== (grant.value.connectionLeaseToken !== null)) {
      return abort(
        ws,
        reader,
        transportError("unauthorized", "", "the grant must carry a new lease token after a bootstrap, and only then"),
        keys,
      );
    }
    const binding: EnvelopeBinding = {
      identity: options.expected.identity,
      connectionId: grant.value.connectionId,
      connectionLeaseId: grant.value.connectionLeaseId,
      leaseExpiresAtUnixMs: grant.value.connectionLeaseExpiresAtUnixMs,
    };
    const sealer = new Sealer(keys.coreToClient, sessionId, "core_to_client", maxFrameBytes);
    const opener = new Opener(keys.clientToCore, sessionId, "client_to_core", maxFrameBytes);
    const welcome = controlEnvelope(
      "welcome",
      binding,
      { ...handshake.welcome(grant.value, maxFrameBytes, intervalMs) },
      randomUUID(),
      new Date(now()).toISOString(),
    );
    const sealed = sealer.seal(JSON.stringify(welcome));
    const written = sealed.ok ? await sendText(ws, sealed.value, timeoutMs) : sealed;
    if (!written.ok) return abort(ws, reader, written.error, keys);
    const heartbeat: HeartbeatPlan<Exclude<CoreToRunnerKind, "welcome">> = {
      intervalMs,
      beat: (c) => c.ping(),
      options: options.heartbeat ?? {},
    };
    const channel = new SecureChannel(
      ws,
      reader,
      sealer,
      opener,
      sessionId,
      binding,
      CORE_TO_RUNNER_KINDS.filter((k): k is Exclude<CoreToRunnerKind, "welcome"> => k !== "welcome"),
      "runner",
      options.handlers,
      now,
      heartbeat,
      options.maxUnsentBytes ?? coreUnsentLimit(maxFrameBytes),
    );
    return ok({ channel, hello: hello.value, grant: grant.value });
  } finally {
    handshake?.destroy();
  }
}
