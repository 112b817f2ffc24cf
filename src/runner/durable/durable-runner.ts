import { setTimeout as sleep } from "node:timers/promises";
import { admit } from "../../contract/admission.js";
import { MAX_PROTOCOL_VERSION, MIN_PROTOCOL_VERSION } from "../../contract/versions.js";
import type { PrpCommand } from "../../contract/kinds.js";
import {
  dial,
  openRunnerChannel,
  parseConnectUrl,
  resolveEndpoint,
  systemTimers,
  type ControlEnvelope,
  type ResolvedEndpoint,
  type RunnerCredential,
  type RunnerLease,
  type RunnerToCoreKind,
  type SecureChannel,
  type Timers,
  type TransportError,
} from "../../transport/index.js";
import type { ActivityPayload } from "../activity/activity-input.js";
import type { RecordOutcome } from "../activity/activity-endpoint.js";
import { RunController } from "../run-controller.js";
import { executeCommand } from "./command-effects.js";
import { deltaCoalescer } from "./delta-coalescer.js";
import type { DurableOutcome, DurableRunnerOptions } from "./durable-options.js";
import { LeaseKeeper } from "./lease-keeper.js";
import { outboxSink } from "./outbox-sink.js";
import { recoverAfterRestart } from "./restart-recovery.js";
import { INCURABLE_REFUSALS, LEASE_REFUSED } from "./authority-refusals.js";
import { DEFAULT_MAX_OUTBOX_BYTES, DEFAULT_P0_RESERVE_BYTES, RunnerState } from "./runner-state.js";

export type { DurableOutcome, DurableRunnerOptions } from "./durable-options.js";

/** How long a revoked runner waits for its outbox to be acknowledged before it stops. */
const REVOKE_FLUSH_MS = 2_000;

/** How long a stopped runner goes on trying to deliver its terminal (see stopDeliveryMs). */
const DEFAULT_STOP_DELIVERY_MS = 30_000;

/**
 * The runner daemon in durable mode (runtime.md §5): one run, its harness, an SQLite outbox
 * and command journal, and an authenticated, encrypted WebSocket to the authority that is
 * redialled with the in-memory lease after a drop. Events are committed before they are sent
 * and resent with identical bytes until acknowledged; each command is journaled before its
 * effect and has one effect however often it arrives. The process ends once the run's terminal
 * is acknowledged.
 */
export class DurableRunner {
  private readonly state: RunnerState;
  private readonly controller: RunController;
  private channel: SecureChannel<RunnerToCoreKind> | null = null;
  private credential: RunnerCredential | null;
  private roomWaiters: Array<() => void> = [];
  /** Renews the current connection's lease; gone with the connection, or once revoked. */
  private keeper: LeaseKeeper | null = null;
  private terminalAdmitted = false;
  /** The highest event sent on the current connection: at most maxBatchEvents run ahead of the ACK. */
  private sentThrough = 0;
  private maxBatchEvents = 1;
  /**
   * Commands run one at a time, apart from the envelope pump, so ACKs never wait behind an
   * effect. A command redelivered on a new connection while its effect is under way queues
   * behind it and then replays its finished result: never the journal's `pending`.
   */
  private commands: Promise<void> = Promise.resolve();
  /** The runner.suspend command whose result the authority must acknowledge before this runner stops. */
  private suspendCommandId: string | null = null;
  private suspendAcked = false;
  private finished: ((outcome: DurableOutcome) => void) | null = null;
  /** Set by a stop signal: past it the runner stops redialling (see stopDeliveryMs). */
  private stopDeadline: number | null = null;
  private readonly restarted: boolean;

  constructor(private readonly options: DurableRunnerOptions) {
    const id = options.identity;
    this.state = RunnerState.open(options.stateDir, {
      ...id,
      maxOutboxBytes: options.maxOutboxBytes ?? DEFAULT_MAX_OUTBOX_BYTES,
      p0ReserveBytes: options.p0ReserveBytes ?? DEFAULT_P0_RESERVE_BYTES,
    });
    this.credential = options.bootstrapToken ? { kind: "bootstrap", token: options.bootstrapToken } : null;
    const c = this.state.counters();
    this.restarted = c.nextSourceSeq > 1 || c.lastControllerCommandSeq > 0;
    // A committed terminal is final: whether the previous process sent it, or saw it acknowledged,
    // the replacement only delivers what is unacknowledged; it never reconciles to a second one.
    this.terminalAdmitted = this.state.terminalSourceSeq() !== null;
    this.controller = new RunController(
      {
        // Until a welcome says otherwise, the version of the last connection (a replacement process) or the highest offered.
        ...options,
        runId: id.runId,
        sessionId: id.normalizedSessionId,
        coalesce: deltaCoalescer,
        protocolVersion: this.state.negotiatedVersion() ?? this.protocolMax,
        ...(options.credentials
          ? {
              credentials: {
                ...options.credentials,
                store: this.state.credentials,
                recorded: (revision: number) => options.hooks?.afterCredential?.(revision),
              },
            }
          : {}),
      },
      outboxSink(this.state, id, {
        send: (_envelope, sourceSeq) => {
          options.hooks?.afterCommit?.(sourceSeq);
          this.sendWindow();
        },
        unrecoverable: (admission) =>
          this.end({ code: 4, reason: "unrecoverable", detail: `${admission.code}: ${admission.message}` }),
        backpressure: (message) => options.log(`backpressure: ${message}; the harness waits until ACKs free room`),
        waitForRoom: (resume) => this.roomWaiters.push(resume),
      }),
    );
    void this.controller.done.then(() => {
      this.terminalAdmitted = true;
      this.state.setLifecycle("stopped");
      this.maybeDelivered();
    });
  }

  private get protocolMax(): number {
    return this.options.protocolMax ?? MAX_PROTOCOL_VERSION;
  }

  /** Cancels the run (a signal to the runner): the harness group is ended and the terminal delivered. */
  cancel(): void {
    this.stopDeadline ??= this.clock.now() + (this.options.stopDeliveryMs ?? DEFAULT_STOP_DELIVERY_MS);
    if (this.terminalAdmitted) return; // the run is over: its committed terminal is only delivered
    void this.controller.stop("cancelled");
  }

  /** The process's last guard: an error nothing handled ends the run failed, with a diagnostic, which is delivered like any terminal. */
  failInternal(message: string): void {
    this.controller.failInternal(message);
  }

  /**
   * runtime.md §13.2: one runtime.activity.recorded, "recorded" once it is committed to the
   * outbox; from there it is delivered like every event, across restarts, exactly once.
   */
  recordActivity(payload: ActivityPayload): Promise<RecordOutcome> {
    return this.controller.recordActivity(payload);
  }

  /** Runs until the run is delivered or the runner must stop; returns how it ended. */
  async run(): Promise<DurableOutcome> {
    const done = new Promise<DurableOutcome>((resolve) => (this.finished = resolve));
    if (this.restarted && !this.terminalAdmitted) recoverAfterRestart(this.state, this.controller);
    const parsed = parseConnectUrl(this.options.connectUrl);
    if (!parsed.ok) return this.end({ code: 4, reason: "unrecoverable", detail: parsed.error.message });
    const endpoint = await resolveEndpoint(parsed.value);
    if (!endpoint.ok) return this.end({ code: 4, reason: "unrecoverable", detail: endpoint.error.message });
    void this.connectLoop(endpoint.value);
    const outcome = await done;
    // Late harness facts (a revoked run's harness still talking) must not reach a closed state.
    this.controller.close();
    this.state.close();
    return outcome;
  }

  private async connectLoop(endpoint: ResolvedEndpoint): Promise<void> {
    while (this.finished) {
      if (!this.credential) return void this.end({ code: 3, reason: "lease_expired_requires_bootstrap" });
      if (this.stopDeadline !== null && this.clock.now() >= this.stopDeadline)
        return void this.end({ code: 3, reason: "stopped_before_delivery" });
      if (this.credential.kind === "lease" && this.credential.expiresAtUnixMs <= this.clock.now()) {
        this.credential = null;
        continue;
      }
      const ws = await dial(endpoint, this.options.caBundle !== undefined ? { caBundle: this.options.caBundle } : {});
      if (!ws.ok && ws.error.code === "tls_untrusted")
        return void this.end({ code: 6, reason: "authority_untrusted", detail: ws.error.message });
      if (ws.ok) {
        const closed = await this.session(ws.value);
        if (!this.finished) return;
        if (closed) this.options.log(`connection closed: ${closed.code}: ${closed.message}`);
        if (closed?.peerCode !== undefined && INCURABLE_REFUSALS.has(closed.peerCode)) {
          return void this.end({
            code: 5,
            reason: "refused_by_authority",
            detail: `${closed.peerCode}: the authority refuses an event of the outbox, and resending it cannot change that (state kept in ${this.options.stateDir})`,
          });
        }
      } else {
        this.options.log(`dial failed: ${ws.error.message}`);
      }
      await sleep(this.options.reconnectDelayMs ?? 250);
    }
  }

  /** One connection: handshake, resume, then envelopes until it closes. Resolves with why it closed. */
  private async session(ws: Parameters<typeof openRunnerChannel>[0]): Promise<TransportError | null> {
    const c = this.state.counters();
    let resolveClosed!: (e: TransportError | null) => void;
    const closed = new Promise<TransportError | null>((r) => (resolveClosed = r));
    const credential = this.credential!;
    const opened = await openRunnerChannel(ws, {
      now: this.clock.now,
      ...(this.options.heartbeat ? { heartbeat: this.options.heartbeat } : {}),
      credential,
      identity: this.options.identity,
      runnerVersion: this.options.runnerVersion,
      runnerDigest: this.options.runnerDigest,
      range: { min: MIN_PROTOCOL_VERSION, max: this.protocolMax },
      ...(this.options.contractDigest !== undefined ? { contractDigest: this.options.contractDigest } : {}),
      resume: {
        lastControllerCommandSeq: c.lastControllerCommandSeq,
        nextSourceEventSeq: c.nextSourceSeq,
        ackedSourceSeq: c.ackedSourceSeq,
      },
      handlers: {
        onEnvelope: (envelope) =>
          envelope.kind === "lease_renewed" ? this.keeper?.renewed(envelope.payload) : this.onEnvelope(envelope),
        onClose: (diagnostic) => {
          this.keeper?.stop();
          this.keeper = null;
          this.channel = null;
          resolveClosed(diagnostic);
        },
      },
    });
    if (!opened.ok) {
      // Refused at the hello, before any credential was looked at: the ticket is unspent, and no redial can help.
      if (opened.error.peerCode === "contract_mismatch") {
        this.end({
          code: 7,
          reason: "contract_mismatch",
          detail: `the authority does not accept the contract this runner was built for (${this.options.contractDigest ?? "none reported"}): upgrade the runner image; the ticket is unspent`,
        });
        return opened.error;
      }
      // Once a bootstrap handshake has started, the ticket may have been consumed: never retry it (§5.3).
      if (credential.kind === "bootstrap") {
        this.options.log(
          `the bootstrap handshake failed: ${opened.error.peerCode ?? opened.error.code}: ${opened.error.message}`,
        );
        this.end({ code: 3, reason: "bootstrap_possibly_consumed" });
      }
      // The authority's refusal arrives as the close reason; a lease it refuses is worth nothing.
      else if (LEASE_REFUSED.has(opened.error.peerCode ?? opened.error.code)) this.credential = null;
      return opened.error;
    }
    this.credential = opened.value.welcome.lease satisfies RunnerLease; // the ticket is spent: only the lease, in memory
    this.channel = opened.value.channel;
    // The version this connection negotiated gates every command and event from here (wire.md D2, O1).
    const version = opened.value.welcome.payload.selectedVersion;
    this.state.setNegotiatedVersion(version);
    this.controller.setProtocolVersion(version);
    this.maxBatchEvents = opened.value.welcome.payload.maxBatchEvents;
    // Lease renewal (runtime.md §5.9): the renewed lease is the one to redial with.
    this.keeper = new LeaseKeeper({
      channel: this.channel,
      lease: this.credential,
      renewalVersion: opened.value.welcome.payload.connectionLeaseRenewalVersion,
      timers: this.clock,
      onLease: (lease) => (this.credential = lease),
    });
    this.state.setLifecycle(this.terminalAdmitted ? "stopped" : "ready");
    this.sentThrough = opened.value.welcome.payload.ackedSourceSeq;
    if (!this.applyAck(opened.value.welcome.payload.ackedSourceSeq)) return closed;
    for (const command of opened.value.welcome.payload.pendingCommands) this.enqueueCommand(command);
    return closed;
  }

  private get clock(): Timers {
    return this.options.clock ?? systemTimers;
  }

  /** Never waits on a command's effect: ACKs, pings and revokes are applied while one runs. */
  private onEnvelope(envelope: ControlEnvelope): void {
    const payload = envelope.payload as Record<string, unknown>;
    switch (envelope.kind) {
      case "ack":
        this.applyAck(payload.ackedSourceSeq as number);
        return;
      case "command":
        return this.enqueueCommand(payload.command);
      case "command_result_ack":
        if (payload.commandId === this.suspendCommandId) {
          this.suspendAcked = true;
          this.maybeDelivered();
        }
        return;
      case "ping":
        this.channel?.send("pong", {
          lifecycle: this.state.counters().lifecycle,
          outboxBytes: this.state.counters().outboxBytes,
          ackedSourceSeq: this.state.counters().ackedSourceSeq,
        });
        return;
      case "revoke":
        // Not awaited: the ACKs that let the outbox drain arrive through this same handler.
        void this.revoked();
        return;
      default:
        return;
    }
  }

  /**
   * Revoked (runtime.md §5.9): persist it, give the outbox a bounded time to be acknowledged on
   * this connection, then stop. Nothing is lost: what is not acknowledged stays in the state.
   */
  private async revoked(): Promise<void> {
    this.state.setLifecycle("revoked");
    // A revoked lease cannot be renewed: asking would only get the flushing connection closed.
    this.keeper?.stop();
    const deadline = Date.now() + REVOKE_FLUSH_MS;
    while (this.channel && this.state.pending().length > 0 && Date.now() < deadline) await sleep(20);
    this.channel?.close();
    this.end({ code: 3, reason: "revoked" });
  }

  /** A cumulative ACK; one that goes backward or past what was produced closes the connection. */
  private applyAck(n: number): boolean {
    const applied = this.state.applyAck(n);
    if (!applied.ok) {
      this.options.log(`refused ack ${n}: ${applied.message}`);
      this.channel?.close();
      return false;
    }
    this.sendWindow();
    if (!this.state.counters().backpressure) for (const resume of this.roomWaiters.splice(0)) resume();
    this.maybeDelivered();
    return true;
  }

  private enqueueCommand(raw: unknown): void {
    this.commands = this.commands.then(() => this.onCommand(raw));
  }

  /** Journal before effect, result committed before it is sent (runtime.md §5.8). */
  private async onCommand(raw: unknown): Promise<void> {
    if (!this.finished) return; // the runner has ended (a welcome's commands queue behind its ACK) and its state is closed
    // The same admission as the authority's queue: the contract, and a canonical JSON form to fingerprint.
    const admitted = admit("command", raw);
    if (!admitted.ok) {
      const id = (raw as { commandId?: unknown })?.commandId;
      if (typeof id === "string")
        this.sendResult(id, "rejected", { code: admitted.error.code, message: admitted.error.message });
      return;
    }
    const command = admitted.value;
    const decision = this.state.beginCommand(command as never);
    if (decision.kind === "replay") return this.sendResult(command.commandId, decision.status, decision.result);
    if (decision.kind === "rejected")
      return this.sendResult(command.commandId, "rejected", { code: decision.code, message: decision.message });
    this.options.hooks?.afterJournal?.(command.controllerSeq);
    const outcome = await executeCommand(command as PrpCommand, {
      state: this.state,
      controller: this.controller,
      terminalAdmitted: this.terminalAdmitted,
      suspended: (commandId) => (this.suspendCommandId = commandId),
    });
    this.state.finishCommand(command.commandId, outcome.status, outcome.result);
    const stored = this.state.beginCommand(command as never);
    if (stored.kind === "replay") this.sendResult(command.commandId, stored.status, stored.result);
  }

  private sendResult(commandId: string, status: string, result: unknown): void {
    this.channel?.send("command_result", { commandId, status, result: result ?? null });
  }

  /**
   * Sends committed events past what this connection has sent, keeping at most
   * `maxBatchEvents` (from the welcome) ahead of the ACK: each is sent once per connection, as
   * its committed bytes.
   */
  private sendWindow(): void {
    const channel = this.channel;
    if (!channel) return;
    const room = this.state.counters().ackedSourceSeq + this.maxBatchEvents - this.sentThrough;
    if (room <= 0) return;
    for (const pending of this.state.pendingAfter(this.sentThrough, room)) {
      if (!channel.sendSerialized("event", "event", pending.envelope).ok) return;
      this.sentThrough = pending.sourceSeq;
    }
  }

  /** The run is delivered once its terminal is admitted and every event is acknowledged. */
  private maybeDelivered(): void {
    const c = this.state.counters();
    if (c.ackedSourceSeq !== c.nextSourceSeq - 1) return;
    if (this.terminalAdmitted || this.suspendAcked) {
      this.channel?.close();
      this.end({ code: 0, reason: this.terminalAdmitted ? "run_delivered" : "suspended" });
    }
  }

  private end(outcome: DurableOutcome): DurableOutcome {
    const finish = this.finished;
    this.finished = null;
    finish?.(outcome);
    return outcome;
  }
}
