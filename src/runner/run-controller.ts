import type { Context, Tracer } from "@opentelemetry/api";
import type * as T from "../contract/generated/types.js";
import type { PrpCommand } from "../contract/kinds.js";
import type { HarnessDriver, HarnessListener } from "../harness/harness-driver.js";
import { RunCredentials, type CredentialObservation } from "./credentials/run-credentials.js";
import type { ActivityPayload } from "./activity/activity-input.js";
import type { RecordOutcome } from "./activity/activity-endpoint.js";
import { EmitGate, type GatedEvent } from "./emit-gate.js";
import type { EventSink } from "./event-sink.js";
import type { Intent } from "./reconcile.js";
import { RunSpans } from "../telemetry/run-spans.js";
import { tracedSink } from "../telemetry/traced-sink.js";
import { RunMachine, type RunEffect, type RunMachineOptions, type Timer, type WarmResume } from "./run-machine.js";

export interface RunControllerOptions extends Omit<
  RunMachineOptions,
  "harnessCommand" | "sessionGoals" | "followUps" | "harnessKind"
> {
  driver: HarnessDriver;
  /** Merges P2 deltas before the gate (durable mode); local mode emits each one. */
  coalesce?: (next: (event: GatedEvent) => void) => { emit(event: GatedEvent): void; flush(): void };
  /** The harness credential file to observe once run.prepare opts in (runtime.md §13.1). */
  credentials?: CredentialObservation;
  /** The run's spans (telemetry/run-spans.ts): the runner instance, and the tracer and parent (default: the global tracer, no parent). */
  trace?: { runnerId: string; tracer?: Tracer; parent?: Context };
}

/**
 * Runs one run: the run machine decides, the harness driver acts on the harness, the emit gate
 * carries events to the sink in order without ever dropping one. This shell only executes
 * the machine's effects — timers, driver calls, emissions — and feeds back what they produce.
 * Nothing here waits on the harness: commands complete when the machine says so.
 */
export class RunController {
  private readonly machine: RunMachine;
  private readonly gate: EmitGate;
  private readonly emitter: { emit(event: GatedEvent): void; flush(): void };
  private readonly timers = new Map<Timer, NodeJS.Timeout>();
  private commandWaiters: Array<() => void> = [];
  private readonly listener: HarnessListener;
  private readonly credentials: RunCredentials;
  private resolveDone!: (terminal: T.PRPRunTerminal) => void;
  private closed = false;
  private readonly spans: RunSpans | null;
  /** Resolves with the run's terminal once the sink has admitted it. */
  readonly done = new Promise<T.PRPRunTerminal>((resolve) => (this.resolveDone = resolve));

  constructor(
    private readonly options: RunControllerOptions,
    sink: EventSink,
  ) {
    const driver = options.driver;
    const t = options.trace;
    this.spans = t
      ? new RunSpans({ runId: options.runId, sessionId: options.sessionId, runnerId: t.runnerId }, t.tracer, t.parent)
      : null;
    if (this.spans) sink = tracedSink(sink, this.spans);
    this.machine = new RunMachine({
      ...options,
      harnessCommand: driver.command,
      ...(driver.sessionGoals ? { sessionGoals: driver.sessionGoals } : {}),
      followUps: driver.steer !== undefined,
      harnessKind: driver.kind === "fake" ? "fake script" : driver.kind,
    });
    this.gate = new EmitGate(sink, {
      pauseHarness: () => driver.pause(),
      resumeHarness: () => driver.resume(),
      invalid: (event, error) =>
        this.run(this.machine.onHarnessEventInvalid(event.eventType, error.path, error.message)),
      refused: (event, code, message) => this.run(this.machine.onEventRefused(event.eventType, code, message)),
    });
    const toGate = (event: GatedEvent) => this.gate.emit(event);
    this.emitter = options.coalesce ? options.coalesce(toGate) : { emit: toGate, flush: () => {} };
    this.credentials = new RunCredentials(options.credentials, (event) => this.closed || this.emitter.emit(event));
    this.listener = {
      fact: (fact) => this.closed || this.run(this.machine.onFact(fact)),
      gone: (gone) => this.closed || this.run(this.machine.onGone(gone)),
    };
  }

  /** The protocol version negotiated on the connection now carrying the run (wire.md D2). */
  setProtocolVersion(version: number): void {
    this.machine.setProtocolVersion(version);
  }

  /** Why an admitted command cannot take effect now, or null. */
  refusal(command: PrpCommand): { code: string; reason: string } | null {
    const refused = this.machine.refusal(command);
    if (refused) this.spans?.command(command).refused(refused.code);
    return refused;
  }

  /** Carries out a command `refusal` accepted; resolves once it has taken its effect. */
  async apply(command: PrpCommand): Promise<void> {
    const span = this.spans?.command(command);
    try {
      await this.untilCommandDone(() => this.machine.apply(command));
    } catch (err) {
      span?.refused("command_failed");
      throw err;
    }
    this.credentials.applied(command);
    span?.applied();
  }

  /** Ends the run for the runner's own reason; resolves once its terminal is admitted. */
  async stop(intent: Intent | null): Promise<void> {
    this.run(this.machine.stop(intent));
    await this.done;
  }

  /** runner.suspend: ends the harness group and reports it, with no terminal (runtime.md §7.4). */
  async suspend(): Promise<void> {
    await this.untilCommandDone(() => this.machine.suspend());
    this.credentials.check(); // what the runner observed is in the outbox before the suspend completes
  }

  /** The runner failed with an error nothing handled: the run ends failed, with a diagnostic (runtime.md §4.4: one terminal). */
  failInternal(message: string): void {
    this.run(this.machine.onInternalError(message));
  }

  /** A restarted durable runner resumes its predecessor's harness session (see RunMachine.recover). */
  recover(resume: WarmResume): void {
    this.run(this.machine.recover(resume));
  }

  /** A restarted durable runner goes on observing the credential its predecessor's host opted in to. */
  resumeCredentials(): void {
    this.credentials.resume();
  }

  /** An event the runner reports about itself (runner.reconciled, runner.draining, …). */
  emitRunnerEvent(eventType: string, payload: Record<string, unknown>): void {
    this.run(this.machine.runnerEvent(eventType, payload));
  }

  /**
   * One runtime.activity.recorded (runtime.md §13.2), P1, beside whatever the harness reports:
   * resolves "recorded" once the sink has admitted it (committed it, in durable mode), and
   * "run_ended" when the run's terminal is already decided (nothing may follow it).
   */
  recordActivity(payload: ActivityPayload): Promise<RecordOutcome> {
    if (this.closed || this.machine.terminated) return Promise.resolve("run_ended");
    return new Promise((resolve) =>
      this.emitter.emit({
        eventType: "runtime.activity.recorded",
        payload: { namespace: payload.namespace, activityKey: payload.activityKey },
        fromHarness: false,
        admitted: () => resolve("recorded"),
      }),
    );
  }

  private untilCommandDone(step: () => RunEffect[]): Promise<void> {
    return new Promise((resolve) => {
      this.commandWaiters.push(resolve);
      this.run(step());
    });
  }

  /**
   * The runner has ended (delivered, revoked, given up) and is closing its state: what the
   * harness still says is no longer recorded, its timers stop, and its group is ended.
   */
  close(): void {
    this.closed = true;
    this.spans?.close();
    this.credentials.stop();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.options.driver.stop();
  }

  private run(effects: RunEffect[]): void {
    if (this.closed) return;
    const driver = this.options.driver;
    for (const effect of effects) {
      switch (effect.kind) {
        case "emit": {
          const { kind: _, ...event } = effect;
          // The run is over once the gate has admitted its terminal, not when it was decided.
          const terminal =
            event.eventType === "run.terminal" && !event.fromHarness
              ? (event.payload as unknown as T.PRPRunTerminal)
              : null;
          this.credentials.beforeEmit(event);
          this.emitter.emit(terminal ? { ...event, admitted: () => this.resolveDone(terminal) } : event);
          this.credentials.afterEmit(event);
          break;
        }
        case "start_harness":
          driver.start(this.listener);
          break;
        case "open_session":
          driver.openSession({
            normalizedSessionId: this.options.sessionId,
            driverSessionId: `driver_${this.options.sessionId}`,
            resume: effect.resume,
            ...(effect.resumeSessionId ? { resumeSessionId: effect.resumeSessionId } : {}),
          });
          break;
        case "start_turn":
          driver.startTurn(
            effect.text !== undefined ? { turnId: effect.turnId, text: effect.text } : { turnId: effect.turnId },
          );
          break;
        case "steer":
          driver.steer?.(effect.text);
          break;
        case "interrupt":
          driver.interrupt(effect.reason);
          break;
        case "resolve_request":
          driver.resolveRequest(effect.requestId, effect.resolution);
          break;
        case "goal":
          driver.goal?.(effect.operation);
          break;
        case "stop_harness":
          driver.stop();
          break;
        case "arm_timer":
          clearTimeout(this.timers.get(effect.timer));
          this.timers.set(
            effect.timer,
            setTimeout(() => this.run(this.machine.onTimer(effect.timer)), effect.ms),
          );
          break;
        case "disarm_timer":
          clearTimeout(this.timers.get(effect.timer));
          this.timers.delete(effect.timer);
          break;
        case "command_done":
          this.commandWaiters.shift()?.();
          break;
        case "ended":
          for (const t of this.timers.values()) clearTimeout(t);
          this.timers.clear();
          break;
      }
    }
  }
}
