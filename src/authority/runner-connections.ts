import type { WebSocket } from "ws";
import type { VersionRange } from "../contract/negotiate.js";
import { MIN_PROTOCOL_VERSION } from "../contract/versions.js";
import {
  acceptCoreChannel,
  EnvelopeRefusal,
  MAX_BATCH_EVENTS,
  type ControlEnvelope,
  type CoreToRunnerKind,
  type SecureChannel,
  type TransportError,
  type TransportErrorCode,
  transportError,
} from "../transport/index.js";
import { AckQueue } from "./ack-queue.js";
import type { CommandQueue } from "./commands.js";
import type { Credentials } from "./credentials.js";
import { coreChannelHooks } from "./handshake-hooks.js";
import type { EventIngest } from "./ingest.js";
import { answerLeaseRenew } from "./lease-renewal.js";
import type { ServerLog } from "./server-log.js";
import type { AuthorityServerSettings } from "./server-options.js";
import { storeFailure } from "./store-failure.js";
import type { AuthorityStore } from "./store.js";

type CoreChannel = SecureChannel<Exclude<CoreToRunnerKind, "welcome">>;

/** Closes that end a connection's life, not refusals of what a frame held: diagnostics, not malformed frames. */
const LIFECYCLE_CLOSES: ReadonlySet<TransportErrorCode> = new Set([
  "handler_failed",
  "peer_silent",
  "lease_expired",
  "lease_renewal_refused",
  "credential_expired",
  "credential_revoked",
]);

export interface RunnerConnectionsDeps {
  settings: AuthorityServerSettings;
  store: AuthorityStore;
  credentials: Credentials;
  commands: CommandQueue;
  ingest: EventIngest;
  log: ServerLog;
  contractCheck: ((digest: string | undefined) => TransportError | null) | undefined;
}

/**
 * The runners' connections: each handshake, one live connection per run, the envelopes each
 * sends (events to ingest and their ACKs in order, command results, lease renewals), and the
 * command queue delivered on it one command at a time.
 */
export class RunnerConnections {
  private readonly live = new Map<string, CoreChannel>();
  /** Each live connection's events waiting for their ACK. */
  private readonly acks = new WeakMap<CoreChannel, AckQueue>();
  /** The revocation epoch each live connection was told of: a higher one in the store is a revoke to send. */
  private readonly liveEpochs = new Map<string, number>();
  /** Envelopes being handled, so a shutdown lets their commits finish. */
  private readonly inflight = new Set<Promise<void>>();
  private closing = false;

  constructor(private readonly deps: RunnerConnectionsDeps) {}

  /** The runs with a live connection now. */
  liveRunIds(): string[] {
    return [...this.live.keys()];
  }

  isLive(runId: string): boolean {
    return this.live.has(runId);
  }

  /** The revocation epoch the run's live connection was told of (0 when none). */
  toldEpoch(runId: string): number {
    return this.liveEpochs.get(runId) ?? 0;
  }

  disconnect(runId: string): void {
    this.live.get(runId)?.close();
  }

  sendRevoke(runId: string, revocationEpoch: number): boolean {
    const channel = this.live.get(runId);
    if (!channel) return false;
    this.liveEpochs.set(runId, revocationEpoch);
    return channel.send("revoke", { revocationEpoch }).ok;
  }

  /** Sends the run's next command when its live connection is idle for one. */
  async deliverNext(runId: string): Promise<void> {
    const channel = this.live.get(runId);
    if (!channel) return;
    const run = await this.deps.store.runCursor(runId);
    if (!run?.currentConnectionId) return;
    const next = await this.deps.commands.nextCommandToDeliver(runId, run.currentConnectionId);
    if (next.ok && next.value)
      channel.send("command", { command: next.value.command as unknown as Record<string, unknown> });
  }

  /** Refuses new connections, tells each live runner `authority_shutdown`, and waits for the commits under way. */
  async close(): Promise<void> {
    this.closing = true;
    for (const channel of this.live.values()) channel.close("authority_shutdown");
    this.live.clear();
    await Promise.allSettled([...this.inflight]);
  }

  async accept(ws: WebSocket, runId: string, authenticated: () => void): Promise<void> {
    const { settings, store, log } = this.deps;
    if (this.closing) return void ws.close(1001, "authority_shutdown");
    // The runner's hello may arrive while the run is read (a networked store takes real time):
    // the socket is held until the channel below listens, so no frame is read unheard.
    ws.pause();
    const run = await store.runCursor(runId);
    if (!run) {
      settings.observer?.handshake({ refused: "unknown_run" });
      log.refusal("runner.unknown_run", `a runner dialled unknown run ${runId}`, {
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
        runnerVersion: settings.runnerVersion,
        runnerDigest: settings.runnerDigest,
        range: expectedRange(run.protocolVersion),
        ...(this.deps.contractCheck ? { contract: this.deps.contractCheck } : {}),
      },
      ...coreChannelHooks(this.deps.credentials, this.deps.commands),
      ...(settings.now ? { now: settings.now } : {}),
      ...(settings.heartbeatIntervalMs ? { heartbeatIntervalMs: settings.heartbeatIntervalMs } : {}),
      ...(settings.heartbeat ? { heartbeat: settings.heartbeat } : {}),
      handlers: {
        onEnvelope: (envelope) => this.track(this.onEnvelope(runId, connectionId, channel!, envelope)),
        onClose: (diagnostic) => {
          if (this.live.get(runId) === channel) this.live.delete(runId);
          this.closed(runId, connectionId, diagnostic);
        },
      },
    });
    ws.resume();
    const accepted = await accepting;
    if (!accepted.ok) {
      settings.observer?.handshake({ refused: accepted.error.code });
      log.refusal(
        `runner.refused ${runId} ${accepted.error.code}`,
        `run ${runId}: handshake refused: ${accepted.error.code}: ${accepted.error.message}`,
        { event: "runner.refused", runId },
      );
      await store.recordAuthFailure(runId, { code: accepted.error.code, message: accepted.error.message }, Date.now());
      return;
    }
    authenticated();
    settings.observer?.handshake("accepted");
    connectionId = accepted.value.grant.connectionId;
    const live = accepted.value.channel;
    channel = live;
    this.live.get(runId)?.close(); // one live runner connection per run (§5.3 step 6)
    this.live.set(runId, live);
    this.liveEpochs.set(runId, accepted.value.grant.connectionLeaseRevocationEpoch);
    const contractDigest = accepted.value.hello.contractDigest;
    log.line(`run ${runId} ${connectionId}: runner connected (contract ${contractDigest ?? "not reported"})`, {
      event: "runner.connected",
      runId,
      connectionId,
      ...(contractDigest ? { contractDigest } : {}),
    });
    settings.hooks?.connected?.(runId, {
      connectionId,
      live: () => this.live.get(runId) === live,
      sendCommand: (command) => live.send("command", { command: command as Record<string, unknown> }).ok,
    });
  }

  /** A connection's end, logged, and recorded on its run unless the socket merely closed. */
  private closed(runId: string, connectionId: string, diagnostic: TransportError | null): void {
    const { store, log } = this.deps;
    log.line(`run ${runId} ${connectionId}: runner disconnected${diagnostic ? `: ${diagnostic.code}` : ""}`, {
      event: "runner.disconnected",
      runId,
      connectionId,
    });
    if (!diagnostic || diagnostic.code === "socket_closed") return;
    log.line(`run ${runId} ${connectionId}: closed: ${diagnostic.code}: ${diagnostic.message}`, {
      event: "runner.closed",
      runId,
      connectionId,
    });
    // A frame the channel refused (not JSON, unsealed, replayed, oversize, a wrong
    // identity) counts as malformed; a refusal by ingest or the queue is recorded there.
    const recorded = LIFECYCLE_CLOSES.has(diagnostic.code)
      ? store.recordDiagnostic(runId, { code: diagnostic.code, message: diagnostic.message }, Date.now())
      : this.deps.ingest.recordMalformedFrame(runId, diagnostic.code, diagnostic.message);
    recorded.catch((err: unknown) =>
      log.line(`run ${runId}: the close was not recorded: ${storeFailure(err).message}`),
    );
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
      const staged = await this.deps.ingest.stage(runId, connectionId, payload.event);
      const acks = this.ackQueue(runId, channel);
      if (!staged.ok) {
        acks.push(Promise.resolve(staged));
        return acks.drained(); // the ACKs of what precedes it, then the close; nothing after it is read
      }
      acks.push(staged.value.outcome);
      void this.track(staged.value.outcome.then(() => undefined));
      if (acks.length >= MAX_BATCH_EVENTS) await acks.oldest(); // a runner past its window waits on TCP
    } else if (envelope.kind === "command_result") {
      const accepted = await this.deps.commands.acceptCommandResult(runId, connectionId, payload);
      if (!accepted.ok) throw new EnvelopeRefusal(accepted.error.code, accepted.error.message);
      if (accepted.value.needsResultAck) channel.send("command_result_ack", { commandId: accepted.value.commandId });
      await this.deliverNext(runId);
    } else if (envelope.kind === "lease_renew") {
      await answerLeaseRenew(this.deps.credentials, channel, runId, connectionId, envelope);
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
      ack: (ackedSourceSeq, secondsSinceCommit) => {
        if (this.deps.settings.hooks?.beforeAck?.(runId, ackedSourceSeq) === "drop") return channel.close();
        if (channel.send("ack", { ackedSourceSeq }).ok) this.deps.settings.observer?.ackSent(secondsSinceCommit);
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
}

/**
 * The hello range a run's runner must advertise (runtime.md §5.3 step 2: exactly): 1 up to the
 * run's protocol version, which it was registered with and each lease keeps. A run registered
 * for v1 takes only a runner started with --protocol-max 1, and negotiates v1 with it.
 */
const expectedRange = (protocolVersion: number): VersionRange => ({ min: MIN_PROTOCOL_VERSION, max: protocolVersion });
