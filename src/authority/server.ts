import type { WebSocket } from "ws";
import type { VersionRange } from "../contract/negotiate.js";
import { MIN_PROTOCOL_VERSION } from "../contract/versions.js";
import type { AdmissionCounts, AdmissionOptions } from "../transport/admission.js";
import { cutNoted } from "../contract/text-cut.js";
import { isLoopback } from "../transport/loopback.js";
import type { TlsIdentity } from "../transport/upgrade-server.js";
import {
  acceptCoreChannel,
  createRunnerUpgradeServer,
  EnvelopeRefusal,
  IDENTITY_PATTERN,
  MAX_BATCH_EVENTS,
  RUNNER_CONNECT_PATH_PREFIX,
  type ControlEnvelope,
  type CoreToRunnerKind,
  type HeartbeatOptions,
  type RunIdentity,
  type RunnerUpgradeServer,
  type SecureChannel,
  type TransportError,
  type TransportErrorCode,
  transportError,
} from "../transport/index.js";
import { AckQueue } from "./ack-queue.js";
import { CommandQueue } from "./commands.js";
import { Credentials, type IssuedTicket } from "./credentials.js";
import type { Result } from "./errors.js";
import { coreChannelHooks } from "./handshake-hooks.js";
import { EventIngest, type OnCommittedEvent } from "./ingest.js";
import { withCredentialsCallback, type OnCredentialsUpdated } from "./credentials-updated.js";
import { answerLeaseRenew } from "./lease-renewal.js";
import { registerRun } from "./runs.js";
import { runnerContractCheck, type RunnerContractOptions } from "./runner-contract.js";
import { storeFailure } from "./store-failure.js";
import type { ServerKey } from "./server-key.js";
import { SqliteAuthorityStore } from "./sqlite-store.js";
import type { AuthorityStore, Diagnostic, RunSnapshot } from "./store.js";

/**
 * The authority's store: one the caller opened (SQLite or PostgreSQL) and closes after the
 * server's `close`, or a SQLite store under `stateDir` that the server opens and closes itself.
 */
export type AuthorityServerOptions = AuthorityServerSettings & ({ store: AuthorityStore } | SqliteStateDir);

export interface SqliteStateDir {
  stateDir: string;
  /** Seals the stored ticket and lease keys; kept outside `stateDir` (server-key-source.ts). */
  serverKey: ServerKey;
  /** See SqliteStoreOptions.adoptServerKey: for a key change, once. */
  adoptServerKey?: boolean;
}

export interface AuthorityServerSettings {
  /** The runner build every run expects (§5.3 step 2). */
  runnerVersion: string;
  runnerDigest: string;
  /**
   * Which runner contracts are accepted at the handshake (runner-contract.ts). Without it every
   * runner is (`any`); `prp authority serve` and `prp demo` default to `equal`.
   */
  runnerContract?: RunnerContractOptions;
  /** The caller's durable commit: the authority acknowledges an event only after it returns. */
  onCommittedEvent?: OnCommittedEvent;
  /** The host's reaction to auth.credentials.updated, awaited in the same commit before the ACK (credentials-updated.ts). */
  onCredentialsUpdated?: OnCredentialsUpdated;
  leaseTtlMs?: number;
  /** The authority's clock (expiry of tickets and leases); tests and the lease-expiry fault move it. */
  now?: () => number;
  /** Dead-runner detection on each connection: its timeout, and its own timers (not `now`). */
  heartbeat?: HeartbeatOptions;
  /** Diagnostics for a person, with the run they concern; never a secret. */
  log?: (text: string, fields?: LogFields) => void;
  /** Serve TLS (wss://) with this certificate chain and key, PEM; without it, ws:// on loopback only. */
  tls?: TlsIdentity;
  /** Admission of connections before they authenticate (defaults in src/transport/limits.ts). */
  connections?: ConnectionLimits;
}

export interface LogFields {
  /** A short name of what happened, e.g. `runner.connected`. */
  event?: string;
  runId?: string;
  connectionId?: string;
  /** The contract digest a connected runner reported. */
  contractDigest?: string;
}

export interface ConnectionLimits extends AdmissionOptions {
  /** The upgrade request must be whole within this; Node answers 408 past it. */
  headersTimeoutMs?: number;
}

type CoreChannel = SecureChannel<Exclude<CoreToRunnerKind, "welcome">>;

/** A log line's bound: a member name of 500 KB in a hello must not become 500 KB of log. */
const MAX_LOG_LINE_BYTES = 1024;
/** The refusal counts kept at most; past it they start again (a run id is part of some keys). */
const MAX_REFUSAL_KEYS = 1024;

/** Closes that end a connection's life, not refusals of what a frame held: diagnostics, not malformed frames. */
const LIFECYCLE_CLOSES: ReadonlySet<TransportErrorCode> = new Set([
  "handler_failed",
  "peer_silent",
  "lease_expired",
  "lease_renewal_refused",
  "credential_expired",
  "credential_revoked",
]);

/**
 * The control-plane authority as a server (runtime.md §6): takes runner upgrades on
 * 127.0.0.1, authenticates them against its tickets and leases, keeps one live connection per
 * run, ingests events in order and acknowledges them after the caller's commit, and delivers
 * the command queue one command at a time. Each connection is pinged every heartbeat interval
 * and closed when its runner falls silent; its lease is renewed when the runner asks.
 */
export class AuthorityServer {
  private upgrade: RunnerUpgradeServer | null = null;
  private baseUrl = "";
  private readonly live = new Map<string, CoreChannel>();
  private readonly ackDrops = new Set<string>();
  /** Each live connection's events waiting for their ACK. */
  private readonly acks = new WeakMap<CoreChannel, AckQueue>();
  /** The revocation epoch each live connection was told of: a higher one in the store is a revoke to send. */
  private readonly liveEpochs = new Map<string, number>();
  /** Envelopes being handled, so a shutdown lets their commits finish. */
  private readonly inflight = new Set<Promise<void>>();
  private closing = false;
  private readonly unsubscribe: () => void;
  /** How many times each refusal was seen (logRefusal). */
  private readonly refusals = new Map<string, number>();
  private readonly contractCheck: ((digest: string | undefined) => TransportError | null) | undefined;

  private constructor(
    private readonly options: AuthorityServerOptions,
    private readonly store: AuthorityStore,
    /** Whether `close` closes the store: only one the server opened itself. */
    private readonly ownsStore: boolean,
    readonly credentials: Credentials,
    readonly commands: CommandQueue,
    private readonly ingest: EventIngest,
  ) {
    // What another instance on the same database did reaches this one's live runner.
    this.contractCheck = options.runnerContract ? runnerContractCheck(options.runnerContract) : undefined;
    this.unsubscribe = store.subscribe((notice) => {
      if (notice.kind === "revoked") this.sendRevoke(notice.runId, notice.revocationEpoch);
      else for (const runId of notice.kind === "missed" ? [...this.live.keys()] : [notice.runId]) this.offerNext(runId);
    });
  }

  /** Every line this server logs, cut to a bound: much of it quotes what a peer sent, before it authenticated. */
  private log(text: string, fields?: LogFields): void {
    this.options.log?.(cutNoted(text, MAX_LOG_LINE_BYTES), fields);
  }

  /**
   * A refusal of an unauthenticated peer, logged the 1st, 2nd, 4th, 8th… time for its key (the
   * event and code): a peer that repeats a failure cannot make the log grow with each attempt.
   */
  private logRefusal(key: string, text: string, fields: LogFields): void {
    if (this.refusals.size >= MAX_REFUSAL_KEYS && !this.refusals.has(key)) this.refusals.clear();
    const count = (this.refusals.get(key) ?? 0) + 1;
    this.refusals.set(key, count);
    if ((count & (count - 1)) === 0)
      this.log(count === 1 ? text : `${text} (${count} times so far; logged at each power of two)`, fields);
  }

  /** Delivers a command queued through another instance; a failure leaves it queued for the next offer or reconnect. */
  private offerNext(runId: string): void {
    this.deliverNext(runId).catch((err: unknown) =>
      this.log(`run ${runId}: delivering a command queued elsewhere failed: ${String(err)}`),
    );
  }

  /**
   * Serves `options.store`, or opens the SQLite store under `stateDir`; throws StateError on a
   * store it must refuse, Error on a bad option.
   */
  static open(options: AuthorityServerOptions): AuthorityServer {
    const ownsStore = !("store" in options);
    const store =
      "store" in options
        ? options.store
        : SqliteAuthorityStore.open(options.stateDir, {
            serverKey: options.serverKey,
            adoptServerKey: options.adoptServerKey === true,
          });
    const clock = options.now ? { now: options.now } : {};
    const credentials = Credentials.create({
      store,
      ...clock,
      ...(options.leaseTtlMs ? { leaseTtlMs: options.leaseTtlMs } : {}),
    });
    if (!credentials.ok) {
      if (ownsStore) void store.close();
      throw new Error(`${credentials.error.code}: ${credentials.error.message}`);
    }
    return new AuthorityServer(
      options,
      store,
      ownsStore,
      credentials.value,
      new CommandQueue({ store, ...clock }),
      new EventIngest({
        store,
        ...clock,
        ...onCommitted(withCredentialsCallback(options.onCommittedEvent, options.onCredentialsUpdated)),
      }),
    );
  }

  /** `protocolVersion`: the highest version the run's runner may negotiate (default 3; see expectedRange). */
  registerRun(identity: RunIdentity, options: { protocolVersion?: number } = {}): Promise<Result<RunSnapshot>> {
    return registerRun(this.store, identity, options);
  }

  issueBootstrapTicket(runId: string, ttlMs?: number): Promise<Result<IssuedTicket>> {
    return this.credentials.issueBootstrapTicket(runId, ttlMs);
  }

  /** Queues a command and, when its run has a live connection idle for commands, delivers it. */
  async queueCommand(runId: string, type: string, payload: Record<string, unknown>, id?: string) {
    const queued = await this.commands.queueCommand(runId, type, payload, id);
    if (queued.ok) await this.deliverNext(runId);
    return queued;
  }

  run(runId: string): Promise<RunSnapshot | undefined> {
    return this.store.run(runId);
  }

  /**
   * The run's recorded diagnostics, oldest first; read-only. The newest 32 are kept, and apart
   * from them the first and the latest refusal of each code before authentication.
   */
  diagnostics(runId: string): Promise<Diagnostic[]> {
    return this.store.diagnostics(runId);
  }

  /** How many times each code refused a connection to the run before authentication. */
  authFailures(runId: string): Promise<Record<string, number>> {
    return this.store.authFailures(runId);
  }

  /** The server's unauthenticated sockets now, and those it refused at a cap or its deadline. */
  admission(): AdmissionCounts {
    return this.upgrade?.admission() ?? { unauthenticated: 0, refused: 0, timedOut: 0 };
  }

  /**
   * Listens (port 0: any free port) and returns the base URL: ws:// on a loopback host, or
   * wss:// on any host when the `tls` option is set (runtime.md §5.1: a runner dials ws:// only
   * to loopback, so a plaintext listener anywhere else would serve nobody but an eavesdropper).
   */
  async listen(port = 0, host = "127.0.0.1"): Promise<string> {
    if (!this.options.tls && !isLoopback(host))
      throw new Error(`ws:// is loopback-only: listening on ${host} needs TLS (a certificate and key)`);
    const { headersTimeoutMs, ...admission } = this.options.connections ?? {};
    let overCap = 0;
    this.upgrade = createRunnerUpgradeServer({
      onRunner: (ws, runId, authenticated) =>
        void this.accept(ws, runId, authenticated).catch((err: unknown) => {
          // The store failed while admitting: the runner redials, with its credential unused or its lease intact.
          const failure = storeFailure(err);
          this.log(`run ${runId}: admission failed: ${failure.code}: ${failure.message}`);
          ws.resume(); // held while the run was read: it must read the runner's close to end
          ws.close(1011, failure.code);
        }),
      onRefused: (error, req) => void this.refusedUpgrade(error, req.url ?? ""),
      onOverCap: (status, address) => {
        overCap++;
        // At each power of two: a flood shows in the log without flooding it.
        if ((overCap & (overCap - 1)) === 0)
          this.log(`refused ${overCap} connection(s) at the admission caps; the latest from ${address}: ${status}`);
      },
      ...(headersTimeoutMs !== undefined ? { headersTimeoutMs } : {}),
      admission,
      ...(this.options.tls ? { tls: this.options.tls } : {}),
    });
    const address = await this.upgrade.listen(port, host);
    this.baseUrl = `${this.options.tls ? "wss" : "ws"}://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
    return this.baseUrl;
  }

  connectUrl(runId: string): string {
    return `${this.baseUrl}${RUNNER_CONNECT_PATH_PREFIX}${runId}`;
  }

  /** Drops a run's live connection (fault injection, or an operator's disconnect). */
  disconnectRunner(runId: string): void {
    this.live.get(runId)?.close();
  }

  /** Commits the next event but loses its ACK with the connection (the lost-ack fault). */
  dropNextAck(runId: string): void {
    this.ackDrops.add(runId);
  }

  /**
   * Revokes the run's credentials with a higher epoch and tells the live runner, which flushes
   * its outbox on this connection and stops (runtime.md §5.9).
   */
  async revoke(runId: string): Promise<boolean> {
    const revoked = await this.credentials.revoke(runId);
    if (!revoked.ok) return false;
    return this.sendRevoke(runId, revoked.value.revocationEpoch);
  }

  /**
   * Acts on what another process changed in the store (an admin command queued a command or
   * revoked a run): each live run gets its next command if it is idle for one, or its `revoke`
   * when the store's epoch passed the one its connection was told of.
   */
  async syncLiveRuns(): Promise<void> {
    for (const runId of [...this.live.keys()]) {
      const run = await this.store.runCursor(runId);
      if (run && run.revocationEpoch > (this.liveEpochs.get(runId) ?? 0)) this.sendRevoke(runId, run.revocationEpoch);
      else await this.deliverNext(runId);
    }
  }

  /**
   * Reads the store every `intervalMs` for what other processes changed (syncLiveRuns): a
   * SQLite store sends no notice across processes, so an admin command or a console beside
   * this server is only seen this way. `stop` ends the polling once the read under way is done.
   */
  pollStore(intervalMs: number, onFailure: (err: Error) => void): { stop(): Promise<void> } {
    let polling: Promise<void> = Promise.resolve();
    const timer = setInterval(() => {
      polling = polling.then(() => this.syncLiveRuns()).catch(onFailure);
    }, intervalMs);
    return {
      stop: async () => {
        clearInterval(timer);
        await polling;
      },
    };
  }

  private sendRevoke(runId: string, revocationEpoch: number): boolean {
    const channel = this.live.get(runId);
    if (!channel) return false;
    this.liveEpochs.set(runId, revocationEpoch);
    return channel.send("revoke", { revocationEpoch }).ok;
  }

  /** Sends the lowest pending command again on the live connection (the duplicate-command fault). */
  async redeliverPendingCommand(runId: string): Promise<boolean> {
    const channel = this.live.get(runId);
    const run = await this.store.runCursor(runId);
    if (!channel || !run?.currentConnectionId) return false;
    const next = await this.commands.nextCommandToDeliver(runId, run.currentConnectionId, { repeat: true });
    if (!next.ok || !next.value) return false;
    return channel.send("command", { command: next.value.command as unknown as Record<string, unknown> }).ok;
  }

  /** Sends a command envelope carrying anything at all (the malformed-input fault). */
  sendRawCommand(runId: string, value: unknown): boolean {
    return this.live.get(runId)?.send("command", { command: value as Record<string, unknown> }).ok ?? false;
  }

  activeRunnerConnectionCount(runId: string): number {
    return this.live.has(runId) ? 1 : 0;
  }

  /**
   * Stops: new upgrades are refused, each live runner is told `authority_shutdown` in its close
   * frame (it keeps its outbox and redials), the commits under way finish, then the store
   * closes, only when the server opened it (`stateDir`).
   */
  async close(): Promise<void> {
    this.closing = true;
    this.unsubscribe();
    for (const channel of this.live.values()) channel.close("authority_shutdown");
    this.live.clear();
    await Promise.allSettled([...this.inflight]);
    await this.upgrade?.close();
    if (this.ownsStore) await this.store.close();
  }

  /**
   * A refused upgrade (an Origin header, a query, extensions) is logged, and recorded on the run
   * its path names when that run is registered here, like every other refusal of a connection.
   */
  private async refusedUpgrade(error: TransportError, target: string): Promise<void> {
    this.logRefusal(`upgrade.refused ${error.code}`, `refused an upgrade: ${error.code}: ${error.message}`, {
      event: "upgrade.refused",
    });
    const path = target.split("?")[0]!;
    const runId = path.startsWith(RUNNER_CONNECT_PATH_PREFIX) ? path.slice(RUNNER_CONNECT_PATH_PREFIX.length) : "";
    if (!IDENTITY_PATTERN.test(runId)) return;
    try {
      await this.store.recordAuthFailure(runId, { code: error.code, message: error.message }, Date.now()); // a no-op for an unknown run
    } catch {
      // the store is closing: the log line above is all there is
    }
  }

  private async accept(ws: WebSocket, runId: string, authenticated: () => void): Promise<void> {
    if (this.closing) return void ws.close(1001, "authority_shutdown");
    // The runner's hello may arrive while the run is read (a networked store takes real time):
    // the socket is held until the channel below listens, so no frame is read unheard.
    ws.pause();
    const run = await this.store.runCursor(runId);
    if (!run) {
      this.logRefusal("runner.unknown_run", `a runner dialled unknown run ${runId}`, {
        event: "runner.unknown_run",
        runId,
      });
      ws.resume();
      ws.close(1008, "unknown_run");
      return;
    }
    let connectionId = "";
    let channel: CoreChannel | null = null;
    const accepting = acceptCoreChannel(ws, {
      expected: {
        identity: run.identity,
        runnerVersion: this.options.runnerVersion,
        runnerDigest: this.options.runnerDigest,
        range: expectedRange(run.protocolVersion),
        ...(this.contractCheck ? { contract: this.contractCheck } : {}),
      },
      ...coreChannelHooks(this.credentials, this.commands),
      ...(this.options.now ? { now: this.options.now } : {}),
      ...(this.options.heartbeat ? { heartbeat: this.options.heartbeat } : {}),
      handlers: {
        onEnvelope: (envelope) => this.track(this.onEnvelope(runId, connectionId, channel!, envelope)),
        onClose: (diagnostic) => {
          if (this.live.get(runId) === channel) this.live.delete(runId);
          this.log(`run ${runId} ${connectionId}: runner disconnected${diagnostic ? `: ${diagnostic.code}` : ""}`, {
            event: "runner.disconnected",
            runId,
            connectionId,
          });
          if (diagnostic && diagnostic.code !== "socket_closed") {
            this.log(`run ${runId} ${connectionId}: closed: ${diagnostic.code}: ${diagnostic.message}`, {
              event: "runner.closed",
              runId,
              connectionId,
            });
            // A frame the channel refused (not JSON, unsealed, replayed, oversize, a wrong
            // identity) counts as malformed; a refusal by ingest or the queue is recorded there.
            const recorded = LIFECYCLE_CLOSES.has(diagnostic.code)
              ? this.store.recordDiagnostic(runId, { code: diagnostic.code, message: diagnostic.message }, Date.now())
              : this.ingest.recordMalformedFrame(runId, diagnostic.code, diagnostic.message);
            recorded.catch((err: unknown) =>
              this.log(`run ${runId}: the close was not recorded: ${storeFailure(err).message}`),
            );
          }
        },
      },
    });
    ws.resume();
    const accepted = await accepting;
    if (!accepted.ok) {
      this.logRefusal(
        `runner.refused ${runId} ${accepted.error.code}`,
        `run ${runId}: handshake refused: ${accepted.error.code}: ${accepted.error.message}`,
        { event: "runner.refused", runId },
      );
      await this.store.recordAuthFailure(
        runId,
        { code: accepted.error.code, message: accepted.error.message },
        Date.now(),
      );
      return;
    }
    authenticated();
    connectionId = accepted.value.grant.connectionId;
    channel = accepted.value.channel;
    this.live.get(runId)?.close(); // one live runner connection per run (§5.3 step 6)
    this.live.set(runId, channel);
    this.liveEpochs.set(runId, accepted.value.grant.connectionLeaseRevocationEpoch);
    const contractDigest = accepted.value.hello.contractDigest;
    this.log(`run ${runId} ${connectionId}: runner connected (contract ${contractDigest ?? "not reported"})`, {
      event: "runner.connected",
      runId,
      connectionId,
      ...(contractDigest ? { contractDigest } : {}),
    });
  }

  private async onEnvelope(
    runId: string,
    connectionId: string,
    channel: CoreChannel,
    envelope: ControlEnvelope,
  ): Promise<void> {
    const payload = envelope.payload as Record<string, unknown>;
    if (envelope.kind === "event") {
      // Staged, not committed: the pump reads the connection's next event while this one commits.
      const staged = await this.ingest.stage(runId, connectionId, payload.event);
      const acks = this.ackQueue(runId, channel);
      if (!staged.ok) {
        acks.push(Promise.resolve(staged));
        return acks.drained(); // the ACKs of what precedes it, then the close; nothing after it is read
      }
      acks.push(staged.value.outcome);
      void this.track(staged.value.outcome.then(() => undefined));
      if (acks.length >= MAX_BATCH_EVENTS) await acks.oldest(); // a runner past its window waits on TCP
    } else if (envelope.kind === "command_result") {
      const accepted = await this.commands.acceptCommandResult(runId, connectionId, payload);
      if (!accepted.ok) throw new EnvelopeRefusal(accepted.error.code, accepted.error.message);
      if (accepted.value.needsResultAck) channel.send("command_result_ack", { commandId: accepted.value.commandId });
      await this.deliverNext(runId);
    } else if (envelope.kind === "lease_renew") {
      await answerLeaseRenew(this.credentials, channel, runId, connectionId, envelope);
    }
  }

  /**
   * The connection's ACKs in event order, each after its commit (ack-queue.ts); a refusal closes
   * the connection naming its code, as a handler's EnvelopeRefusal does.
   */
  private ackQueue(runId: string, channel: CoreChannel): AckQueue {
    let acks = this.acks.get(channel);
    if (acks) return acks;
    acks = new AckQueue({
      ack: (ackedSourceSeq) => {
        if (this.ackDrops.delete(runId)) return channel.close();
        channel.send("ack", { ackedSourceSeq });
      },
      refuse: (error) =>
        channel.abort(
          transportError("handler_failed", "", `the envelope handler failed: ${error.code}: ${error.message}`),
          error.code,
        ),
    });
    this.acks.set(channel, acks);
    return acks;
  }

  private track(handling: Promise<void>): Promise<void> {
    this.inflight.add(handling);
    const done = () => void this.inflight.delete(handling);
    handling.then(done, done);
    return handling;
  }

  private async deliverNext(runId: string): Promise<void> {
    const channel = this.live.get(runId);
    if (!channel) return;
    const run = await this.store.runCursor(runId);
    if (!channel || !run?.currentConnectionId) return;
    const next = await this.commands.nextCommandToDeliver(runId, run.currentConnectionId);
    if (next.ok && next.value)
      channel.send("command", { command: next.value.command as unknown as Record<string, unknown> });
  }
}

/**
 * The hello range a run's runner must advertise (runtime.md §5.3 step 2: exactly): 1 up to the
 * run's protocol version, which it was registered with and each lease keeps. A run registered
 * for v1 takes only a runner started with --protocol-max 1, and negotiates v1 with it.
 */
const expectedRange = (protocolVersion: number): VersionRange => ({ min: MIN_PROTOCOL_VERSION, max: protocolVersion });

const onCommitted = (callback: OnCommittedEvent | undefined) => (callback ? { onCommittedEvent: callback } : {});
