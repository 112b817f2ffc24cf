import { canonicalForm } from "../contract/canonical-json.js";
import { decodeValue } from "../contract/decode.js";
import type * as T from "../contract/generated/types.js";
import type { PrpCommand } from "../contract/kinds.js";
import { responseMismatch } from "../contract/question-rules.js";
import { commandVersionRefusal, eventEnvelopeVersion } from "../contract/version-gates.js";
import { MAX_PROTOCOL_VERSION } from "../contract/versions.js";
import {
  GOALS_UNSUPPORTED,
  type GoalChange,
  type GoalOperation,
  type HarnessFact,
  type HarnessGone,
} from "../harness/harness-driver.js";
import { reconcileTerminal, type Intent, type StopCause } from "./reconcile.js";
import { cutText } from "../contract/text-cut.js";
import { TURN_ENDS } from "../contract/turn-ends.js";

/** The PRP command types a run acts on. */
export const SUPPORTED_COMMANDS: ReadonlySet<string> = new Set([
  "run.prepare",
  "session.open",
  "turn.start",
  "turn.interrupt",
  "turn.stop",
  "request.resolve",
  "run.cancel",
  "session.goal.get",
  "session.goal.set",
  "session.goal.clear",
]);
/** The event each goal change of the harness is reported as (runtime.md §9). */
const GOAL_EVENT: Record<GoalChange, string> = {
  snapshot: "session.goal.snapshot",
  updated: "session.goal.updated",
  cleared: "session.goal.cleared",
};
/** Event families only the runner may report; a harness that sends one is not believed. */
const RUNNER_OWNED = /^(run|harness|runner)\./;

export type Timer = "ready" | "session_started";

/** What the machine asks its shell to do, in order. */
export type RunEffect =
  /** `schemaVersion`: the envelope version, set only when the type needs more than v1 (wire.md O1). */
  | {
      kind: "emit";
      eventType: string;
      payload: Record<string, unknown>;
      turnId?: string;
      itemId?: string;
      fromHarness: boolean;
      schemaVersion?: number;
    }
  | { kind: "start_harness" }
  /** `resumeSessionId`: the session a restarted durable runner's new harness loads (warm resume). */
  | { kind: "open_session"; resume: boolean; resumeSessionId?: string }
  | { kind: "start_turn"; turnId: string; text?: string }
  | { kind: "interrupt"; reason: string }
  | { kind: "resolve_request"; requestId: string; resolution: Record<string, unknown> }
  | { kind: "goal"; operation: GoalOperation }
  | { kind: "stop_harness" }
  | { kind: "arm_timer"; timer: Timer; ms: number }
  | { kind: "disarm_timer"; timer: Timer }
  /** The command being applied has taken its effect (the durable runner then sends its result). */
  | { kind: "command_done" }
  /** The run's one terminal was emitted: nothing follows. */
  | { kind: "ended" };

export interface RunMachineOptions {
  runId: string;
  sessionId: string;
  /** The harness's command line, as harness.starting reports it. */
  harnessCommand: string;
  /** How long the harness has to say ready (runtime.md §4.1: 2 s). */
  readyTimeoutMs?: number;
  /** How long session.open waits for the session to start before the next command (§4.3: 10 s). */
  commandWaitMs?: number;
  /** How often a harness killed by a signal the runner did not send is started again (default 1). */
  harnessRestartLimit?: number;
  /**
   * The protocol version the run's peer negotiated (default 3); a durable runner sets it again
   * on each connection (setProtocolVersion). It gates commands and events (wire.md D2, O1).
   */
  protocolVersion?: number;
  /** The harness's session goal capability; absent means unsupported (runtime.md §9). */
  sessionGoals?: T.SessionGoalCapability;
}

/** What the runner keeps of a request it has seen created (the request schema dispatches on schema). */
interface PendingRequest {
  schema: string;
  requestId: string;
  input?: T.PRPQuestionSet;
}

type Refusal = { code: string; reason: string } | null;

/** What a restarted durable runner knows of its predecessor's harness (runtime.md §8.3). */
export interface WarmResume {
  /** The harness's session, recorded when it started. */
  driverSessionId: string;
  /** Whether the agent said it can load a session in a new process. */
  loadSession: boolean;
  /**
   * The run's turn when it was under way — turn.start journaled, no end of the turn committed —
   * with its id once turn.submitted was committed; null when no turn had started.
   */
  turn: { turnId: string | null } | null;
}

/**
 * One run as a pure state machine (runtime.md §4): admitted commands, harness facts and timer
 * expiries go in; PRP events to emit and things to do to the harness come out as effects. It
 * owns every decision — what a command means now, which harness report is believed, when the
 * run ends and with which one terminal — and touches no process, clock or socket, so a run can
 * be replayed from its inputs alone.
 */
export class RunMachine {
  private harnessUp = false;
  private harnessReady = false;
  private harnessTrusted = true;
  /** Set once the runner itself ends the harness: its exit is then expected, not a crash. */
  private terminating = false;
  /**
   * Set once the harness's leader exited by itself (a code, no signal) before the runner ended
   * it: the run's outcome is then the harness's, and a stop that arrives while its output drains
   * (the controller closing, a signal, a cancel) does not turn it into cancelled.
   */
  private exitedOnItsOwn = false;
  private restarting = false;
  /** A restarted durable runner's new harness is loading the session: turns wait for it. */
  private recovering: WarmResume | null = null;
  private deferredTurn: Extract<RunEffect, { kind: "start_turn" }> | null = null;
  private harnessRestarts = 0;
  private suspended = false;
  private intent: Intent | null = null;
  private stopCause: StopCause | null = null;
  private prepared = false;
  private sessionOpened = false;
  private turnId: string | null = null;
  private turnEnded = false;
  private readonly pendingRequests = new Map<string, PendingRequest>();
  private result: T.PRPStructuredRunResult | null = null;
  private proposal: Record<string, unknown> | null = null;
  /** The command whose effect waits on the harness: the harness's ready, or its session start. */
  private waitingFor: Timer | "gone" | null = null;
  private ended = false;
  private out: RunEffect[] = [];
  private protocolVersion: number;

  constructor(private readonly options: RunMachineOptions) {
    this.protocolVersion = options.protocolVersion ?? MAX_PROTOCOL_VERSION;
  }

  /** The version negotiated on the connection now carrying the run's commands and events. */
  setProtocolVersion(version: number): void {
    this.protocolVersion = version;
  }

  get terminated(): boolean {
    return this.ended;
  }

  /** Why an admitted command cannot take effect now, or null. Its sequence number stays used. */
  refusal(command: PrpCommand): Refusal {
    const no = (code: string, reason: string) => ({ code, reason });
    if (this.ended) return no("run_terminal", "the run has ended");
    // A v1 peer never gets a v2 command carried out: refused before any harness work (wire.md D2).
    const tooNew = commandVersionRefusal(command, this.protocolVersion);
    if (tooNew) return tooNew;
    switch (command.type) {
      case "run.prepare":
        return this.prepared ? no("already_prepared", "the run is already prepared") : null;
      case "session.open":
        if (!this.prepared) return no("not_prepared", "session.open needs run.prepare first");
        return this.sessionOpened ? no("session_already_open", "the session is already open") : null;
      case "turn.start":
        if (!this.sessionOpened) return no("session_not_open", "turn.start needs session.open first");
        return this.turnId
          ? no("turn_already_started", `turn ${this.turnId} is already started; a run has one turn`)
          : null;
      case "turn.interrupt":
      case "turn.stop":
        return this.turnId && !this.turnEnded ? null : no("no_active_turn", "there is no active turn to interrupt");
      case "request.resolve":
        return this.resolutionRefusal(command.payload as Record<string, unknown>);
      case "session.goal.get":
      case "session.goal.set":
      case "session.goal.clear": {
        if (!this.sessionOpened) return no("session_not_open", `${command.type} needs session.open first`);
        const action = goalAction(command);
        const capability = this.options.sessionGoals ?? GOALS_UNSUPPORTED;
        // Controls are carried out only when the capability advertises them (runtime.md §9).
        return capability.actions.includes(action)
          ? null
          : no(
              "goal_action_unsupported",
              `the harness does not advertise the session goal action ${action} (availability ${capability.availability})`,
            );
      }
      default:
        return SUPPORTED_COMMANDS.has(command.type)
          ? null
          : no("unsupported_command", `this runner does not support ${command.type} commands`);
    }
  }

  private resolutionRefusal(payload: Record<string, unknown>): Refusal {
    const request = this.pendingRequests.get(String(payload.requestId));
    if (!request) return { code: "unknown_request", reason: `no pending request ${JSON.stringify(payload.requestId)}` };
    const resolution = payload.resolution as Record<string, unknown> | undefined;
    if (!resolution || typeof resolution.action !== "string")
      return { code: "invalid_resolution", reason: "resolution.action is required" };
    if (request.input && resolution.action === "submit") {
      const response = decodeValue(resolution.response, { kind: "question-response" });
      if (!response.ok)
        return {
          code: response.error.code,
          reason: `resolution.response${response.error.path}: ${response.error.message}`,
        };
      const mismatch = responseMismatch(request.input, response.value, "/resolution/response");
      if (mismatch) return { code: mismatch.code, reason: `${mismatch.path}: ${mismatch.message}` };
    }
    return null;
  }

  /** Carries out a command `refusal` accepted; `command_done` says when its effect has happened. */
  apply(command: PrpCommand): RunEffect[] {
    const payload = command.payload as Record<string, unknown>;
    switch (command.type) {
      case "run.prepare":
        this.prepared = true;
        this.emit("runtime.phase.changed", { phase: "workspace_preparing" });
        this.emit("workspace.ready", {});
        this.emit("harness.starting", { command: this.options.harnessCommand });
        this.startHarness();
        break;
      case "session.open":
        this.sessionOpened = true;
        this.emit("session.starting", {});
        this.do({ kind: "open_session", resume: false });
        if (this.harnessUp) {
          // Hold the next command until the harness answers: session.started, then the phase
          // `executing` (§4.3). Otherwise turn.submitted could land between the two.
          this.waitingFor = "session_started";
          this.do({ kind: "arm_timer", timer: "session_started", ms: this.options.commandWaitMs ?? 10_000 });
        } else this.do({ kind: "command_done" });
        break;
      case "turn.start": {
        const turnId =
          typeof payload.turnId === "string" && payload.turnId ? payload.turnId : `turn_${this.options.runId}_1`;
        this.turnId = turnId;
        this.emit("turn.submitted", {}, { turnId });
        const start = {
          kind: "start_turn" as const,
          turnId,
          ...(typeof payload.text === "string" ? { text: payload.text } : {}),
        };
        if (this.recovering) this.deferredTurn = start;
        else this.do(start);
        this.do({ kind: "command_done" });
        break;
      }
      case "turn.interrupt":
      case "turn.stop":
        this.runnerIntent("interrupted");
        this.do({ kind: "interrupt", reason: typeof payload.reason === "string" ? payload.reason : "operator" });
        this.do({ kind: "command_done" });
        break;
      case "request.resolve":
        this.do({
          kind: "resolve_request",
          requestId: String(payload.requestId),
          resolution: payload.resolution as Record<string, unknown>,
        });
        this.do({ kind: "command_done" });
        break;
      case "run.cancel":
        this.stopRun("cancelled");
        this.do({ kind: "command_done" });
        break;
      case "session.goal.get":
      case "session.goal.set":
      case "session.goal.clear":
        this.do({ kind: "goal", operation: goalOperation(command) });
        this.do({ kind: "command_done" });
        break;
    }
    return this.flush();
  }

  /** What the harness reported. */
  onFact(fact: HarnessFact): RunEffect[] {
    if (this.ended || !this.harnessTrusted) return this.flush();
    switch (fact.kind) {
      case "exited":
        if (!this.terminating && fact.exit.signal === null) this.exitedOnItsOwn = true;
        break;
      case "ready":
        this.onReady(fact.pid, fact.resumePoint, fact.agent);
        break;
      case "event":
        this.onHarnessEvent(fact);
        break;
      case "result":
        this.onResult(fact.payload);
        break;
      case "terminal_proposal":
        if (this.proposal)
          this.emit("harness.diagnostic", {
            code: "duplicate_terminal_ignored",
            message: "the harness proposed a second terminal; the first one stands",
          });
        else this.proposal = fact.payload;
        break;
      case "violation":
        this.violation(fact.message, fact.code);
        break;
      case "goal":
        this.emit(GOAL_EVENT[fact.change], fact.change === "cleared" ? {} : { goal: fact.goal });
        break;
    }
    return this.flush();
  }

  /**
   * After every session open or resume: the full capability, then the authoritative snapshot
   * (runtime.md §9). A harness that can read its goal is asked; one that cannot has none. On a
   * v1 connection there is no goal to report, and nothing is asked.
   */
  private announceGoals(): void {
    if (eventEnvelopeVersion("session.capabilities.updated", this.protocolVersion) === null) return; // a v1 peer has no goals: the harness is not asked
    const capability = this.options.sessionGoals ?? GOALS_UNSUPPORTED;
    this.emit("session.capabilities.updated", { sessionGoals: capability });
    if (capability.actions.includes("get")) this.do({ kind: "goal", operation: { action: "get" } });
    else this.emit("session.goal.snapshot", { goal: null });
  }

  private onReady(pid: number, resumePoint: Record<string, unknown>, agent?: Record<string, unknown>): void {
    this.harnessReady = true;
    this.do({ kind: "disarm_timer", timer: "ready" });
    this.emit("harness.ready", {
      pid,
      ...(this.harnessRestarts > 0 ? { restart: this.harnessRestarts } : {}),
      ...(agent ? { agent } : {}),
    });
    if (this.recovering) {
      this.do({ kind: "open_session", resume: true, resumeSessionId: this.recovering.driverSessionId });
      this.do({ kind: "arm_timer", timer: "session_started", ms: this.loadWaitMs() });
    } else if (this.restarting) {
      // The replacement resumes the session where its predecessor stopped (§5.10 harness-restart).
      this.restarting = false;
      this.do({ kind: "open_session", resume: true });
      this.emit("session.reconciled", { ...resumePoint, restart: this.harnessRestarts });
      this.announceGoals();
      if (this.turnId) this.do({ kind: "start_turn", turnId: this.turnId });
    }
    if (this.waitingFor === "ready") this.commandDone();
  }

  private onHarnessEvent(e: Extract<HarnessFact, { kind: "event" }>): void {
    if (e.eventType === "harness.diagnostic") return this.emit(e.eventType, e.payload); // the driver's own note on its harness
    if (RUNNER_OWNED.test(e.eventType))
      return this.violation(`harness may not report ${e.eventType}: the runner reports run, harness and runner events`);
    if (e.eventType === "runtime_request.created") {
      const request = decodeValue(e.payload.request, { kind: "request" });
      if (!request.ok)
        return this.violation(
          `harness request is not a valid request: ${request.error.path || "/"}: ${request.error.message}`,
        );
      const r = e.payload.request as PendingRequest;
      this.pendingRequests.set(r.requestId, r);
    } else if (e.eventType === "runtime_request.resolved" || e.eventType === "runtime_request.cancelled") {
      this.pendingRequests.delete(String(e.payload.requestId));
    } else if (TURN_ENDS.has(e.eventType)) {
      this.turnEnded = true;
    }
    this.out.push({
      kind: "emit",
      eventType: e.eventType,
      payload: e.payload,
      ...(e.turnId ? { turnId: e.turnId } : this.turnId ? { turnId: this.turnId } : {}),
      ...(e.itemId ? { itemId: e.itemId } : {}),
      fromHarness: true,
    });
    if (
      (e.eventType === "runtime.phase.changed" && e.payload.phase === "executing") ||
      e.eventType === "session.failed"
    ) {
      if (e.eventType !== "session.failed" && (this.waitingFor === "session_started" || this.recovering))
        this.announceGoals();
      if (this.waitingFor === "session_started") this.commandDone();
      if (this.recovering)
        this.resumed(e.eventType === "session.failed" ? String(e.payload.message ?? "the agent gave no reason") : null);
    }
  }

  /**
   * A restarted durable runner resumes the session of its predecessor's harness (runtime.md
   * §8.3): a new harness loads it, and the run goes on from there. A turn that was under way
   * when the runner died is indeterminate: it is reported failed, never sent again, and the
   * run ends. An agent that cannot load a session ends the run at once, saying so.
   */
  recover(resume: WarmResume): RunEffect[] {
    this.prepared = true;
    this.sessionOpened = true;
    if (resume.turn) this.turnId = resume.turn.turnId ?? `turn_${this.options.runId}_1`;
    if (!resume.loadSession) {
      this.failClosed(
        "runner_restarted",
        "session_not_resumable",
        `the runner restarted, and its agent does not advertise loadSession: session ${resume.driverSessionId} cannot be resumed in a new agent process`,
      );
      return this.flush();
    }
    this.recovering = resume;
    this.startHarness();
    return this.flush();
  }

  /** The new harness answered the session load: `failure` says why it could not, or null. */
  private resumed(failure: string | null): void {
    const resume = this.recovering!;
    this.recovering = null;
    this.do({ kind: "disarm_timer", timer: "session_started" });
    const id = resume.driverSessionId;
    if (failure !== null) {
      this.failClosed(
        "runner_restarted",
        "session_resume_failed",
        `the runner restarted, and the agent could not resume session ${id}: ${failure}`,
      );
    } else if (resume.turn) {
      const message = `the runner restarted during turn ${this.turnId}: whether the agent finished it is unknown, and its prompt is not sent again`;
      this.emit("turn.failed", { code: "turn_indeterminate", message }, { turnId: this.turnId! });
      this.turnEnded = true;
      this.failClosed("runner_restarted", "turn_indeterminate", message);
    } else if (this.deferredTurn) {
      this.do(this.deferredTurn);
      this.deferredTurn = null;
    }
  }

  private onResult(payload: Record<string, unknown>): void {
    if (this.result)
      return this.emit("harness.diagnostic", {
        code: "duplicate_semantic_result_ignored",
        message: "the harness proposed a second result; the first one stands",
      });
    // Checked here, not only at emission: the reconciliation relies on a valid result.
    const checked = decodeValue(payload, { kind: "result" });
    if (!checked.ok)
      return this.violation(
        `harness result is not a valid run result: ${checked.error.path || "/"}: ${checked.error.message}`,
      );
    this.result = checked.value;
    this.out.push({
      kind: "emit",
      eventType: "run.result.proposed",
      payload,
      ...(this.turnId ? { turnId: this.turnId } : {}),
      fromHarness: true,
    });
  }

  /** An event the harness reported broke the contract when it was emitted: the harness's fault. */
  onHarnessEventInvalid(eventType: string, path: string, message: string): RunEffect[] {
    this.violation(`harness ${eventType} event breaks the contract: ${path || "/"}: ${message}`);
    return this.flush();
  }

  /**
   * An event that can never be carried (larger than the outbox or a frame): the run fails
   * closed, with a P0 diagnostic that says which event and why (runtime.md §5.7: never silent).
   */
  onEventRefused(eventType: string, code: string, message: string): RunEffect[] {
    this.failClosed(
      "event_refused",
      "event_refused",
      `${eventType} was refused (${code}): ${message}`,
      `${eventType}: ${message}`,
    );
    return this.flush();
  }

  /** The runner itself failed with an error nothing handled: the run fails closed, saying so (the process's last guard). */
  onInternalError(message: string): RunEffect[] {
    this.failClosed("internal_error", "runner_internal_error", message);
    return this.flush();
  }

  /**
   * Ends the run failed with a P0 diagnostic and a stopReason of the runner's own; the first cause
   * stands. It overrides even an outcome the harness reached by itself: a run whose report cannot
   * be carried, or whose runner broke, did not succeed.
   */
  private failClosed(
    intent: "event_refused" | "internal_error" | "runner_restarted",
    code: string,
    diagnostic: string,
    cause = diagnostic,
  ): void {
    if (this.ended || this.stopCause) return; // the first cause already ends the run
    this.emit("runner.diagnostic", { code, message: diagnostic });
    this.stopCause = { receiptId: `stop_${this.options.runId}`, code, message: cause };
    this.setIntent(intent);
    this.stopRun(null);
  }

  /** The harness is gone: restart it after a crash, report a suspension, or end the run. */
  onGone(gone: HarnessGone): RunEffect[] {
    this.harnessUp = false;
    this.do({ kind: "disarm_timer", timer: "ready" });
    if (this.ended) return this.flush();
    if (this.suspended) {
      this.emit("harness.exited", {
        ...gone.exit,
        semanticResultObserved: this.result !== null,
        log: gone.log,
        suspended: true,
      });
      if (this.waitingFor === "gone") this.commandDone();
      return this.flush();
    }
    if (!this.harnessReady && !this.intent && this.harnessTrusted) {
      this.violation(`harness did not say ready: it exited (${JSON.stringify(gone.exit)}) first`);
    }
    // The requests of a harness that is gone can never be answered: none stays pending.
    this.cancelPending(
      `the harness that asked it is gone (${gone.exit.signal ? `signal ${gone.exit.signal}` : `exit code ${gone.exit.exitCode}`})`,
    );
    // A driver that ended its harness on purpose (an ACP agent after its turn) reports success: no crash.
    // An exit the driver caused, or any exit once the turn is being interrupted or the run
    // cancelled, is not a crash either: restarting would send the turn's prompt again.
    const crashed =
      !this.terminating &&
      !gone.endedByDriver &&
      !this.intent &&
      gone.exit.signal !== null &&
      !gone.exit.success &&
      this.sessionOpened;
    if (crashed && this.harnessRestarts < (this.options.harnessRestartLimit ?? 1)) {
      this.harnessRestarts++;
      this.emit("harness.exited", {
        ...gone.exit,
        semanticResultObserved: this.result !== null,
        log: gone.log,
        restarting: true,
      });
      this.restarting = true;
      this.startHarness();
      return this.flush();
    }
    this.emit("harness.exited", { ...gone.exit, semanticResultObserved: this.result !== null, log: gone.log });
    this.finish(gone);
    return this.flush();
  }

  onTimer(timer: Timer): RunEffect[] {
    if (this.ended) return this.flush();
    if (timer === "ready" && !this.harnessReady) {
      if (!this.intent) this.violation(`harness did not say ready within ${this.options.readyTimeoutMs ?? 2_000} ms`);
      if (this.waitingFor === "ready") this.commandDone();
    } else if (timer === "session_started" && this.waitingFor === "session_started") {
      this.commandDone();
    } else if (timer === "session_started" && this.recovering) {
      this.resumed(`no answer to the session load within ${this.loadWaitMs()} ms`);
    }
    return this.flush();
  }

  /**
   * Ends the run for a reason of the runner's own: the controller went away, a signal, a
   * cancel; with no intent, the run ends on its facts alone (a restarted runner whose harness
   * is gone).
   */
  stop(intent: Intent | null): RunEffect[] {
    if (!this.ended) this.stopRun(intent);
    return this.flush();
  }

  /**
   * Suspends the run without ending it (runner.suspend): the harness group is ended and its
   * exit reported, but no terminal is decided — the session stays for a later resume.
   * `command_done` follows once the harness is gone.
   */
  suspend(): RunEffect[] {
    if (this.ended || this.suspended) {
      this.do({ kind: "command_done" });
      return this.flush();
    }
    this.suspended = true;
    this.terminating = true;
    if (this.harnessUp) {
      this.waitingFor = "gone";
      this.do({ kind: "stop_harness" });
    } else this.do({ kind: "command_done" });
    return this.flush();
  }

  /** An event the runner reports about itself (runner.reconciled, runner.draining, …). */
  runnerEvent(eventType: string, payload: Record<string, unknown>): RunEffect[] {
    this.emit(eventType, payload);
    return this.flush();
  }

  private stopRun(intent: Intent | null): void {
    if (intent) this.runnerIntent(intent);
    this.terminating = true;
    // A harness that exited by itself is already being reaped by its driver: `gone` follows.
    if (this.exitedOnItsOwn && this.harnessUp) return;
    if (this.harnessUp) this.do({ kind: "stop_harness" });
    else this.finish(null);
  }

  /** A session load replays the whole conversation: it gets as long as the harness has to start, and at least the command wait. */
  private loadWaitMs(): number {
    return Math.max(this.options.commandWaitMs ?? 10_000, this.options.readyTimeoutMs ?? 0);
  }

  private startHarness(): void {
    this.harnessUp = true;
    this.exitedOnItsOwn = false;
    this.harnessReady = false;
    this.harnessTrusted = true;
    if (!this.restarting && !this.recovering) this.waitingFor = "ready";
    this.do({ kind: "start_harness" });
    this.do({ kind: "arm_timer", timer: "ready", ms: this.options.readyTimeoutMs ?? 2_000 });
  }

  /** A harness that breaks the protocol is not believed again, and its group is ended. */
  private violation(message: string, code?: string): void {
    if (!this.harnessTrusted) return;
    this.harnessTrusted = false;
    // A reason the driver typed travels in the terminal, so a reader need not parse the message.
    if (code && !this.stopCause)
      this.stopCause = { receiptId: `stop_${this.options.runId}`, code, message: cutText(message, 4000) };
    this.setIntent("protocol_violation");
    this.emit("harness.diagnostic", { code: "harness_protocol_violation", message });
    this.terminating = true;
    if (this.harnessUp) this.do({ kind: "stop_harness" });
  }

  private setIntent(intent: Intent): void {
    this.intent ??= intent;
  }

  /** A reason of the runner's or the controller's to stop: too late once the harness has its own outcome. */
  private runnerIntent(intent: Intent): void {
    if (!this.exitedOnItsOwn) this.setIntent(intent);
  }

  private finish(gone: HarnessGone | null): void {
    this.cancelPending("the run ended");
    const facts = {
      intent: this.intent,
      exit: gone?.exit ?? null,
      result: this.result,
      proposal: this.proposal,
      stopCause: this.stopCause,
    };
    let terminal = reconcileTerminal(facts);
    if (this.proposal && !canonicalForm(terminal).ok) {
      // The harness's proposal would make the run's one terminal uncarriable (a lone surrogate,
      // too many values): the terminal is decided without it, and that is said.
      this.emit("harness.diagnostic", {
        code: "terminal_proposal_dropped",
        message: "the harness's terminal proposal has no canonical JSON form, so the terminal leaves it out",
      });
      terminal = reconcileTerminal({ ...facts, proposal: null });
    }
    this.emit(
      "run.terminal",
      terminal as unknown as Record<string, unknown>,
      this.turnId ? { turnId: this.turnId } : {},
    );
    this.ended = true;
    if (this.waitingFor) this.commandDone();
    this.do({ kind: "ended" });
  }

  /** Cancels every request still pending, as an event, saying why: nobody can answer it any more. */
  private cancelPending(reason: string): void {
    for (const r of this.pendingRequests.values())
      this.emit(
        "runtime_request.cancelled",
        { requestId: r.requestId, reason, decidedBy: { by: "runner" } },
        this.turnId ? { turnId: this.turnId } : {},
      );
    this.pendingRequests.clear();
  }

  private commandDone(): void {
    if (this.waitingFor === "session_started") this.do({ kind: "disarm_timer", timer: "session_started" });
    this.waitingFor = null;
    this.do({ kind: "command_done" });
  }

  private emit(
    eventType: string,
    payload: Record<string, unknown>,
    ids: { turnId?: string; itemId?: string } = {},
  ): void {
    if (this.ended) return; // nothing follows run.terminal
    this.out.push({ kind: "emit", eventType, payload, ...ids, fromHarness: false });
  }

  private do(effect: RunEffect): void {
    this.out.push(effect);
  }

  /**
   * What was decided, with each event under the envelope version its type needs; an event the
   * negotiated version does not have is not reported at all (a v1 peer never sees a goal event).
   */
  private flush(): RunEffect[] {
    const out: RunEffect[] = [];
    for (const effect of this.out) {
      if (effect.kind !== "emit") {
        out.push(effect);
        continue;
      }
      const version = eventEnvelopeVersion(effect.eventType, this.protocolVersion);
      if (version === null) continue;
      out.push(version === 1 ? effect : { ...effect, schemaVersion: version });
    }
    this.out = [];
    return out;
  }
}

/** The capability action a goal command needs: a set that only changes the status pauses or resumes. */
function goalAction(command: PrpCommand): T.SessionGoalCapability["actions"][number] {
  if (command.type === "session.goal.get") return "get";
  if (command.type === "session.goal.clear") return "clear";
  const p = command.payload as Record<string, unknown>;
  if (p.objective === undefined && p.tokenBudget === undefined && p.status !== undefined)
    return p.status === "paused" ? "pause" : "resume";
  return "set";
}

/** The harness's side of a goal command: only the fields that change the goal (requestId stays with the command). */
function goalOperation(command: PrpCommand): GoalOperation {
  if (command.type === "session.goal.get") return { action: "get" };
  if (command.type === "session.goal.clear") return { action: "clear" };
  const p = command.payload as Record<string, unknown>;
  return {
    action: "set",
    ...(typeof p.objective === "string" ? { objective: p.objective } : {}),
    ...(p.status === "active" || p.status === "paused" ? { status: p.status } : {}),
    ...(p.tokenBudget === null || typeof p.tokenBudget === "number" ? { tokenBudget: p.tokenBudget } : {}),
  };
}
