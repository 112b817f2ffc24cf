import { canonicalForm } from "../../contract/canonical-json.js";
import type * as T from "../../contract/generated/types.js";
import { cutText } from "../../contract/text-cut.js";
import { eventEnvelopeVersion } from "../../contract/version-gates.js";
import { STOP_REASON_KIND } from "../../agents/start-causes.js";
import { GOALS_UNSUPPORTED, type HarnessGone } from "../../harness/harness-driver.js";
import { reconcileTerminal, type Intent, type StopCause } from "../reconcile.js";
import type { RunEffect, StartTurn, Timer } from "./effects.js";
import type { StallPolicy } from "./stall-watch.js";
import { MAX_PROTOCOL_VERSION } from "../../contract/versions.js";
import {
  harnessOf,
  newHarness,
  saidReady,
  type Harness,
  type PendingRequest,
  type Phase,
  type WarmResume,
} from "./state.js";

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
  /** The harness takes turn.steer as a queued follow-up (its driver has `steer`); default no. */
  followUps?: boolean;
  /** What the harness is, in a person's words, for a refusal (e.g. `fake script`, `acp`). */
  harnessKind?: string;
  /** Stall detection by progress (stall-watch.ts); absent or a 0 limit: off. */
  stall?: StallPolicy;
}

/**
 * The run's state — its phase, and the facts that outlive any one harness — with every phase
 * transition and the effects they ask for. Commands and harness facts are read elsewhere and
 * come here to change the run.
 */
export class RunState {
  phase: Phase = { name: "idle" };
  // run.prepare, session.open, the turn and its requests belong to the run, not to a harness: a
  // restarted or recovered harness takes them over as they are, whatever its phase.
  prepared = false;
  sessionOpened = false;
  turn: { id: string; ended: boolean } | null = null;
  readonly pendingRequests = new Map<string, PendingRequest>();
  result: T.PRPStructuredRunResult | null = null;
  proposal: Record<string, unknown> | null = null;
  intent: Intent | null = null;
  stopCause: StopCause | null = null;
  harnessRestarts = 0;
  /** The stall timer is armed (stall-watch.ts). */
  stallArmed = false;
  /** The run stalled: its interrupt is sent, and its terminal says `stalled`. */
  stalled = false;
  /**
   * The command whose effect waits on the harness: its ready, its session start, or its exit
   * (runner.suspend). It spans phases: a ready timeout ends the wait but not the start.
   */
  waitingFor: Timer | "gone" | null = null;
  protocolVersion: number;
  out: RunEffect[] = [];

  constructor(readonly options: RunMachineOptions) {
    this.protocolVersion = options.protocolVersion ?? MAX_PROTOCOL_VERSION;
  }

  get ended(): boolean {
    return this.phase.name === "ended";
  }

  get harness(): Harness | null {
    return harnessOf(this.phase);
  }

  /** The turn the run's events belong to, as their ids. */
  turnIds(): { turnId?: string } {
    return this.turn ? { turnId: this.turn.id } : {};
  }

  emit(eventType: string, payload: Record<string, unknown>, ids: { turnId?: string; itemId?: string } = {}): void {
    if (this.ended) return; // nothing follows run.terminal
    this.out.push({ kind: "emit", eventType, payload, ...ids, fromHarness: false });
  }

  do(effect: RunEffect): void {
    this.out.push(effect);
  }

  /** run.prepare's harness: the command's effect waits for its ready. */
  prepareHarness(): void {
    this.waitingFor = "ready";
    this.startHarness({ name: "starting", harness: newHarness() });
  }

  /** A restarted durable runner's harness, to load its predecessor's session. */
  recoverHarness(resume: WarmResume): void {
    this.startHarness({ name: "recovering", harness: newHarness(), ready: false, resume, deferredTurn: null });
  }

  /** A crashed harness's replacement; one that crashed while loading a session loads it again. */
  restartHarness(): void {
    const phase = this.phase;
    this.harnessRestarts++;
    this.startHarness(
      phase.name === "recovering"
        ? { ...phase, harness: newHarness(), ready: false }
        : { name: "restarting", harness: newHarness() },
    );
  }

  private startHarness(phase: Phase): void {
    this.phase = phase;
    this.do({ kind: "start_harness" });
    this.do({ kind: "arm_timer", timer: "ready", ms: this.options.readyTimeoutMs ?? 2_000 });
  }

  /** The harness said ready: the run's work moves on only where its phase says so. */
  harnessReady(): void {
    const phase = this.phase;
    if (phase.name === "starting" || phase.name === "restarting")
      this.phase = { name: "ready", harness: phase.harness };
    else if (phase.name === "recovering" || phase.name === "suspended") this.phase = { ...phase, ready: true };
  }

  /** The suspended run's harness is gone: the suspension is complete. */
  suspensionDone(): void {
    if (this.phase.name === "suspended") this.phase = { name: "suspended", harness: null, ready: true };
  }

  /** The recovering harness answered the session load: the run goes on as its ready says. */
  sessionLoaded(): void {
    if (this.phase.name !== "recovering") return;
    const { harness, ready } = this.phase;
    this.phase = ready ? { name: "ready", harness } : { name: "starting", harness };
  }

  /** turn.start's call to the harness; one still loading the session gets it once the load is answered. */
  startTurn(start: StartTurn): void {
    if (this.phase.name === "recovering") this.phase = { ...this.phase, deferredTurn: start };
    else this.do(start);
  }

  /**
   * runner.suspend: ends the harness group without a terminal; `command_done` follows once the
   * harness is gone.
   */
  suspend(): void {
    if (this.ended || this.phase.name === "suspended") return this.do({ kind: "command_done" });
    const harness = this.harness;
    this.phase = { name: "suspended", harness, ready: saidReady(this.phase) };
    if (!harness) return this.do({ kind: "command_done" });
    harness.stopping = true;
    this.waitingFor = "gone";
    this.do({ kind: "stop_harness" });
  }

  /** Ends the run: the harness is asked to end (its gone brings the terminal), or the terminal comes now. */
  stopRun(intent: Intent | null): void {
    if (intent) this.runnerIntent(intent);
    const harness = this.harness;
    if (!harness) return this.finish(null);
    harness.stopping = true;
    // A harness that exited by itself is already being reaped by its driver: `gone` follows.
    if (!harness.exitedOnItsOwn) this.do({ kind: "stop_harness" });
  }

  /** A harness that breaks the protocol is not believed again, and its group is ended. */
  violation(message: string, code?: string): void {
    const harness = this.harness;
    if (harness && !harness.trusted) return;
    this.blame(message, code);
    if (!harness) return;
    harness.trusted = false;
    harness.stopping = true;
    this.do({ kind: "stop_harness" });
  }

  /** The run's side of a violation: its cause and its diagnostic. */
  blame(message: string, code?: string): void {
    // A reason the driver typed travels in the terminal, so a reader need not parse the message.
    if (code && !this.stopCause)
      this.stopCause = { receiptId: `stop_${this.options.runId}`, code, message: cutText(message, 4000) };
    this.setIntent("protocol_violation");
    this.emit("harness.diagnostic", { code: "harness_protocol_violation", message });
  }

  /**
   * Ends the run failed with a P0 diagnostic and a stopReason of the runner's own; the first cause
   * stands. It overrides even an outcome the harness reached by itself: a run whose report cannot
   * be carried, or whose runner broke, did not succeed.
   */
  failClosed(
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

  /**
   * The agent cannot start the run (HarnessFact `start_failed`): the run ends failed now, its
   * stopReason the typed cause (kind agent_start); the first cause stands. Its group is ended,
   * and the terminal follows its `gone` — at once when no process was started.
   */
  agentStartFailed(code: string, message: string, noProcess: boolean): void {
    if (this.ended || this.stopCause || this.intent) return;
    const cause = cutText(message, 4000);
    this.stopCause = { receiptId: `stop_${this.options.runId}`, kind: STOP_REASON_KIND, code, message: cause };
    this.setIntent("agent_start_failed");
    this.emit("harness.diagnostic", { code, message: cause });
    const harness = this.harness;
    if (noProcess || !harness) {
      this.do({ kind: "disarm_timer", timer: "ready" });
      return this.finish(null);
    }
    harness.stopping = true;
    if (!harness.exitedOnItsOwn) this.do({ kind: "stop_harness" });
  }

  setIntent(intent: Intent): void {
    this.intent ??= intent;
  }

  /** A reason of the runner's or the controller's to stop: too late once the harness has its own outcome. */
  runnerIntent(intent: Intent): void {
    if (!this.harness?.exitedOnItsOwn) this.setIntent(intent);
  }

  /** Decides and emits the run's one terminal. */
  finish(gone: HarnessGone | null): void {
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
    this.emit("run.terminal", terminal as unknown as Record<string, unknown>, this.turnIds());
    this.phase = { name: "ended" };
    if (this.waitingFor) this.commandDone();
    this.do({ kind: "ended" });
  }

  /** Cancels every request still pending, as an event, saying why: nobody can answer it any more. */
  cancelPending(reason: string): void {
    for (const r of this.pendingRequests.values())
      this.emit(
        "runtime_request.cancelled",
        { requestId: r.requestId, reason, decidedBy: { by: "runner" } },
        this.turnIds(),
      );
    this.pendingRequests.clear();
  }

  commandDone(): void {
    if (this.waitingFor === "session_started") this.do({ kind: "disarm_timer", timer: "session_started" });
    this.waitingFor = null;
    this.do({ kind: "command_done" });
  }

  /**
   * After every session open or resume: the full capability, then the authoritative snapshot
   * (runtime.md §9). A harness that can read its goal is asked; one that cannot has none. On a
   * v1 connection there is no goal to report, and nothing is asked.
   */
  announceGoals(): void {
    if (eventEnvelopeVersion("session.capabilities.updated", this.protocolVersion) === null) return; // a v1 peer has no goals: the harness is not asked
    const capability = this.options.sessionGoals ?? GOALS_UNSUPPORTED;
    // v3 says which turn controls the harness has: turn.steer here is a queued follow-up, never mid-prompt steering.
    const turnControls = this.protocolVersion >= 3 && this.options.followUps;
    this.emit("session.capabilities.updated", {
      sessionGoals: capability,
      ...(turnControls ? { turnControls: { steering: false, queuedFollowUp: true } } : {}),
    });
    if (capability.actions.includes("get")) this.do({ kind: "goal", operation: { action: "get" } });
    else this.emit("session.goal.snapshot", { goal: null });
  }

  /** A session load replays the whole conversation: it gets as long as the harness has to start, and at least the command wait. */
  loadWaitMs(): number {
    return Math.max(this.options.commandWaitMs ?? 10_000, this.options.readyTimeoutMs ?? 0);
  }
}
