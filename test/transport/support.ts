import { randomUUID } from "node:crypto";
import { connect, type Socket } from "node:net";
import type { WebSocket } from "ws";
import {
  acceptCoreChannel,
  authKey,
  authKeyDigest,
  createRunnerUpgradeServer,
  credentialId,
  dial,
  fail,
  ok,
  openRunnerChannel,
  parseConnectUrl,
  resolveEndpoint,
  type AuthorizeRequest,
  type ChannelHandlers,
  type ControlEnvelope,
  type CoreChannelOptions,
  type CredentialRecord,
  type LeaseGrant,
  type Result,
  type RunExpectation,
  type RunIdentity,
  type RunnerChannelOptions,
  type RunnerCredential,
  type RunnerUpgradeServer,
  type TransportError,
} from "../../src/transport/index.js";
import { ManualTimers } from "../support/manual-timers.js";

export const IDENTITY: RunIdentity = {
  runnerInstanceId: "runner-1",
  environmentLeaseId: "env-1",
  runId: "run-1",
  normalizedSessionId: "session-1",
  turnId: "turn-1",
  itemId: "item-1",
};

export const EXPECTED: RunExpectation = {
  identity: IDENTITY,
  runnerVersion: "0.1.0",
  runnerDigest: `sha256:${"cd".repeat(32)}`,
  range: { min: 1, max: 3 },
};
export const RESUME = { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 };

/**
 * Heartbeats on a clock that never moves: no ping joins the envelopes a test counts, and no
 * side is closed as silent while a test takes its time. Heartbeat tests bring their own timers.
 */
export const STILL_HEARTBEAT = { timers: new ManualTimers() };

/** The authority's part of the handshake, in memory: records by credential id, and the step-6 hook. */
export class MemoryAuthority {
  readonly records = new Map<string, CredentialRecord>();
  authorizeCalls = 0;
  private connections = 0;

  issueBootstrap(ttlMs = 5_000, identity: RunIdentity = IDENTITY): string {
    const token = `bootstrap_${randomUUID()}`;
    this.store(token, {
      kind: "bootstrap",
      identity,
      expiresAtUnixMs: Date.now() + ttlMs,
      used: false,
      revoked: false,
      leaseId: null,
      revocationEpoch: 0,
      protocolVersion: null,
    });
    return token;
  }

  record(token: string): CredentialRecord | undefined {
    return this.records.get(credentialId(token));
  }

  store(token: string, record: Omit<CredentialRecord, "credentialId" | "authKeyDigest">): void {
    const key = authKey(token);
    this.records.set(credentialId(token), {
      ...record,
      credentialId: credentialId(token),
      authKeyDigest: authKeyDigest(key),
    });
    key.fill(0);
  }

  readonly lookup = (id: string): CredentialRecord | undefined => {
    const record = this.records.get(id);
    return record && structuredClone(record);
  };

  readonly authorize = (request: AuthorizeRequest): Result<LeaseGrant> => {
    this.authorizeCalls++;
    const current = this.records.get(request.hello.credentialId);
    if (current === undefined || JSON.stringify(current) !== JSON.stringify(request.record))
      return fail("unauthorized", "", "the credential changed during the handshake");
    const connectionId = `connection_${++this.connections}`;
    if (current.kind === "bootstrap") {
      current.used = true;
      const token = `lease_${randomUUID()}`;
      const leaseId = `lease-${this.connections}`;
      const expiresAtUnixMs = Date.now() + 60_000;
      this.store(token, {
        kind: "lease",
        identity: current.identity,
        expiresAtUnixMs,
        used: false,
        revoked: false,
        leaseId,
        revocationEpoch: 0,
        protocolVersion: request.challenge.selectedVersion,
      });
      return ok({
        connectionId,
        connectionLeaseId: leaseId,
        connectionLeaseToken: token,
        connectionLeaseExpiresAtUnixMs: expiresAtUnixMs,
        connectionLeaseRevocationEpoch: 0,
        ackedSourceSeq: 0,
        pendingCommands: [],
      });
    }
    return ok({
      connectionId,
      connectionLeaseId: current.leaseId!,
      connectionLeaseToken: null,
      connectionLeaseExpiresAtUnixMs: current.expiresAtUnixMs,
      connectionLeaseRevocationEpoch: current.revocationEpoch,
      ackedSourceSeq: 3,
      pendingCommands: [],
    });
  };
}

/** Collects what a channel hands over, and its end. */
export class Inbox implements ChannelHandlers {
  readonly envelopes: ControlEnvelope[] = [];
  closed: TransportError | null | undefined = undefined;
  private waiters: Array<() => void> = [];

  onEnvelope(envelope: ControlEnvelope): void {
    this.envelopes.push(envelope);
    this.notify();
  }

  onClose(diagnostic: TransportError | null): void {
    this.closed = diagnostic;
    this.notify();
  }

  /** Resolves once the condition holds (the test runner's timeout bounds it). */
  async until(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}

export type CoreResult = Awaited<ReturnType<typeof acceptCoreChannel>>;

/** An authority endpoint on 127.0.0.1 with an ephemeral port; every accept result is kept. */
export class TestServer {
  readonly results: CoreResult[] = [];
  readonly refused: TransportError[] = [];
  readonly inbox = new Inbox();
  private readonly pending = new Set<Promise<void>>();
  private server: RunnerUpgradeServer;
  port = 0;
  /** WebSocket pongs the core's sockets received: the runners' answers to its beats. */
  pongs = 0;

  constructor(
    readonly authority: MemoryAuthority,
    overrides: Partial<CoreChannelOptions> = {},
  ) {
    this.server = createRunnerUpgradeServer({
      onRunner: (ws, _runId, authenticated) => {
        ws.on("pong", () => this.pongs++);
        const done = acceptCoreChannel(ws, {
          expected: EXPECTED,
          lookupCredential: authority.lookup,
          authorize: authority.authorize,
          handlers: this.inbox,
          heartbeat: STILL_HEARTBEAT,
          ...overrides,
        }).then((r) => {
          if (r.ok) authenticated();
          this.results.push(r);
        });
        this.pending.add(done);
        void done.finally(() => this.pending.delete(done));
      },
      onRefused: (error) => this.refused.push(error),
    });
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}/api/runner/v1/connect/${IDENTITY.runId}`;
  }

  async start(): Promise<this> {
    this.port = (await this.server.listen(0, "127.0.0.1")).port;
    return this;
  }

  /** The next accept result, once its handshake ended. */
  async accepted(count = 1): Promise<CoreResult> {
    while (this.results.length < count) await Promise.race([...this.pending, new Promise((r) => setTimeout(r, 5))]);
    return this.results[count - 1]!;
  }

  async close(): Promise<void> {
    for (const r of this.results) if (r.ok) r.value.channel.close();
    await this.server.close();
    await Promise.all(this.pending);
  }
}

/** The runner's whole way in: URL rules, pinned loopback resolution, dial, handshake. */
export async function connectRunner(
  url: string,
  credential: RunnerCredential,
  handlers: ChannelHandlers,
  overrides: Partial<RunnerChannelOptions> = {},
  /** Sees the runner's WebSocket before the handshake: a test counts the core's beats on it. */
  onSocket?: (ws: WebSocket) => void,
) {
  const endpoint = parseConnectUrl(url);
  if (!endpoint.ok) return endpoint;
  const resolved = await resolveEndpoint(endpoint.value);
  if (!resolved.ok) return resolved;
  const ws = await dial(resolved.value);
  if (!ws.ok) return ws;
  onSocket?.(ws.value);
  return openRunnerChannel(ws.value, {
    credential,
    identity: IDENTITY,
    runnerVersion: EXPECTED.runnerVersion,
    runnerDigest: EXPECTED.runnerDigest,
    resume: RESUME,
    handlers,
    heartbeat: STILL_HEARTBEAT,
    ...overrides,
  });
}

/** A raw TCP socket to 127.0.0.1, for requests and frames a well-behaved client would never send. */
export function rawSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Everything the peer sends until it closes the connection. */
export function readUntilClosed(socket: Socket): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => {});
    socket.on("close", () => resolve(Buffer.concat(chunks)));
  });
}

export function upgradeRequest(path: string, extraHeaders: string[] = []): string {
  return [
    `GET ${path} HTTP/1.1`,
    "Host: 127.0.0.1",
    "Upgrade: websocket",
    "Connection: Upgrade",
    "Sec-WebSocket-Version: 13",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    ...extraHeaders,
    "",
    "",
  ].join("\r\n");
}

/** One RFC 6455 frame, masked (client to server) or not. */
export function wsFrame(opcode: number, payload: Buffer, masked: boolean): Buffer {
  return Buffer.concat([
    frameHeader(opcode, payload.length, masked),
    masked ? Buffer.from(payload.map((b, i) => b ^ MASK[i % 4]!)) : payload,
  ]);
}

const MASK = Buffer.from([1, 2, 3, 4]);

/** A frame header (with the masking key when masked) announcing `length` payload bytes. */
export function frameHeader(opcode: number, length: number, masked: boolean): Buffer {
  const bit = masked ? 0x80 : 0;
  let header: Buffer;
  if (length < 126) header = Buffer.from([0x80 | opcode, bit | length]);
  else if (length < 65_536) header = Buffer.from([0x80 | opcode, bit | 126, length >> 8, length & 0xff]);
  else {
    header = Buffer.alloc(10);
    header[0] = 0x80 | opcode;
    header[1] = bit | 127;
    header.writeBigUInt64BE(BigInt(length), 2);
  }
  return masked ? Buffer.concat([header, MASK]) : header;
}

/** An upgraded raw socket: the 101 response is read, frames are the test's to write. */
export async function rawUpgrade(
  port: number,
  path = `/api/runner/v1/connect/${IDENTITY.runId}`,
): Promise<{ socket: Socket; closed: Promise<Buffer> }> {
  const socket = await rawSocket(port);
  socket.write(upgradeRequest(path));
  const head = await new Promise<Buffer>((resolve) => {
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      const end = seen.indexOf("\r\n\r\n");
      if (end >= 0) {
        socket.off("data", onData);
        socket.pause();
        if (end + 4 < seen.length) socket.unshift(seen.subarray(end + 4));
        resolve(seen.subarray(0, end));
      }
    };
    socket.on("data", onData);
  });
  if (!head.toString("latin1").startsWith("HTTP/1.1 101"))
    throw new Error(`upgrade refused: ${head.toString("latin1")}`);
  const closed = readUntilClosed(socket);
  // Answer the server's close frame as a client must, so it can end the TCP connection at once.
  socket.on("data", (chunk: Buffer) => {
    if (closeCode(chunk) !== null && socket.writable) socket.end(wsFrame(0x8, Buffer.from([0x03, 0xe8]), true));
  });
  socket.resume();
  return { socket, closed };
}

/** The close code of the first close frame (unmasked, server to client) in what a server sent. */
export function closeCode(bytes: Buffer): number | null {
  for (let at = 0; at + 2 <= bytes.length;) {
    const opcode = bytes[at]! & 0x0f;
    let length = bytes[at + 1]! & 0x7f;
    let start = at + 2;
    if (length === 126) {
      length = bytes.readUInt16BE(start);
      start += 2;
    } else if (length === 127) {
      length = Number(bytes.readBigUInt64BE(start));
      start += 8;
    }
    if (opcode === 0x8) return length >= 2 ? bytes.readUInt16BE(start) : null;
    at = start + length;
  }
  return null;
}
