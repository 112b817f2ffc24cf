import type { PrpCommand } from "../contract/kinds.js";
import type { HarnessFact, HarnessGone } from "../harness/harness-driver.js";
import type { Intent } from "./reconcile.js";
import { apply, refusal, type Refusal } from "./run-machine/commands.js";
import { versioned, type RunEffect, type Timer } from "./run-machine/effects.js";
import { onFact, onGone, resumed } from "./run-machine/harness-facts.js";
import { RunState, type RunMachineOptions } from "./run-machine/run-state.js";
import { isProgress, onStall, onStallGrace, syncStallWatch } from "./run-machine/stall-watch.js";
import { saidReady, type WarmResume } from "./run-machine/state.js";

export { SUPPORTED_COMMANDS } from "./run-machine/commands.js";
export type { RunEffect, Timer } from "./run-machine/effects.js";
export type { RunMachineOptions } from "./run-machine/run-state.js";
export type { WarmResume } from "./run-machine/state.js";

/**
 * One run as a pure state machine (runtime.md §4): admitted commands, harness facts and timer
 * expiries go in; PRP events to emit and things to do to the harness come out as effects. It
 * owns every decision — what a command means now, which harness report is believed, when the
 * run ends and with which one terminal — and touches no process, clock or socket, so a run can
 * be replayed from its inputs alone. The run's state and its transitions are `RunState`; this
 * class hands each input to the module that reads it.
 */
export class RunMachine {
  private readonly run: RunState;

  constructor(options: RunMachineOptions) {
    this.run = new RunState(options);
  }

  /** The version negotiated on the connection now carrying the run's commands and events. */
  setProtocolVersion(version: number): void {
    this.run.protocolVersion = version;
  }

  get terminated(): boolean {
    return this.run.ended;
  }

  /** Why an admitted command cannot take effect now, or null. Its sequence number stays used. */
  refusal(command: PrpCommand): Refusal {
    return refusal(this.run, command);
  }

  /** Carries out a command `refusal` accepted; `command_done` says when its effect has happened. */
  apply(command: PrpCommand): RunEffect[] {
    apply(this.run, command);
    return this.flush();
  }

  /** What the harness reported. */
  onFact(fact: HarnessFact): RunEffect[] {
    onFact(this.run, fact);
    return this.flush(isProgress(fact));
  }

  /** The harness is gone: restart it after a crash, report a suspension, or end the run. */
  onGone(gone: HarnessGone): RunEffect[] {
    onGone(this.run, gone);
    return this.flush();
  }

  /**
   * A restarted durable runner resumes the session of its predecessor's harness (runtime.md
   * §8.3): a new harness loads it, and the run goes on from there. An agent that cannot load a
   * session ends the run at once, saying so.
   */
  recover(resume: WarmResume): RunEffect[] {
    const run = this.run;
    run.prepared = true;
    run.sessionOpened = true;
    if (resume.turn) run.turn = { id: resume.turn.turnId ?? `turn_${run.options.runId}_1`, ended: false };
    if (resume.loadSession) run.recoverHarness(resume);
    else
      run.failClosed(
        "runner_restarted",
        "session_not_resumable",
        `the runner restarted, and its agent does not advertise loadSession: session ${resume.driverSessionId} cannot be resumed in a new agent process`,
      );
    return this.flush();
  }

  /** An event the harness reported broke the contract when it was emitted: the harness's fault. */
  onHarnessEventInvalid(eventType: string, path: string, message: string): RunEffect[] {
    this.run.violation(`harness ${eventType} event breaks the contract: ${path || "/"}: ${message}`);
    return this.flush();
  }

  /**
   * An event that can never be carried (larger than the outbox or a frame): the run fails
   * closed, with a P0 diagnostic that says which event and why (runtime.md §5.7: never silent).
   */
  onEventRefused(eventType: string, code: string, message: string): RunEffect[] {
    this.run.failClosed(
      "event_refused",
      "event_refused",
      `${eventType} was refused (${code}): ${message}`,
      `${eventType}: ${message}`,
    );
    return this.flush();
  }

  /** The runner itself failed with an error nothing handled: the run fails closed, saying so (the process's last guard). */
  onInternalError(message: string): RunEffect[] {
    this.run.failClosed("internal_error", "runner_internal_error", message);
    return this.flush();
  }

  onTimer(timer: Timer): RunEffect[] {
    const run = this.run;
    if (run.ended) return this.flush();
    if (timer === "ready" && !saidReady(run.phase)) {
      if (!run.intent) run.violation(`harness did not say ready within ${run.options.readyTimeoutMs ?? 2_000} ms`);
      if (run.waitingFor === "ready") run.commandDone();
    } else if (timer === "session_started" && run.waitingFor === "session_started") {
      run.commandDone();
    } else if (timer === "session_started" && run.phase.name === "recovering") {
      resumed(run, `no answer to the session load within ${run.loadWaitMs()} ms`);
    } else if (timer === "stall") {
      onStall(run);
    } else if (timer === "stall_grace") {
      onStallGrace(run);
    }
    return this.flush();
  }

  /**
   * Ends the run for a reason of the runner's own: the controller went away, a signal, a
   * cancel; with no intent, the run ends on its facts alone (a restarted runner whose harness
   * is gone).
   */
  stop(intent: Intent | null): RunEffect[] {
    if (!this.run.ended) this.run.stopRun(intent);
    return this.flush();
  }

  /**
   * Suspends the run without ending it (runner.suspend): the harness group is ended and its
   * exit reported, but no terminal is decided — the session stays for a later resume.
   * `command_done` follows once the harness is gone.
   */
  suspend(): RunEffect[] {
    this.run.suspend();
    return this.flush();
  }

  /** An event the runner reports about itself (runner.reconciled, runner.draining, …). */
  runnerEvent(eventType: string, payload: Record<string, unknown>): RunEffect[] {
    this.run.emit(eventType, payload);
    return this.flush();
  }

  /** The effects decided so far, after the stall watch has caught up with the input (`progressed`: it was progress). */
  private flush(progressed = false): RunEffect[] {
    syncStallWatch(this.run, progressed);
    const out = versioned(this.run.out, this.run.protocolVersion);
    this.run.out = [];
    return out;
  }
}
