import type * as T from "../../contract/generated/types.js";
import type { StartTurn } from "./effects.js";

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

/** One harness process, from start_harness until it is gone. */
export interface Harness {
  /** False once it broke the protocol: nothing more it says is believed. */
  trusted: boolean;
  /**
   * The runner asked it to end: its exit is expected, not a crash. A fact of the harness, not a
   * phase: a harness asked to end before its ready still answers as its phase says until it is gone.
   */
  stopping: boolean;
  /**
   * Its leader exited by itself (a code, no signal) before the runner ended it: the run's outcome
   * is then the harness's, and a stop that arrives while its output drains (the controller
   * closing, a signal, a cancel) does not turn it into cancelled.
   */
  exitedOnItsOwn: boolean;
}

export const newHarness = (): Harness => ({ trusted: true, stopping: false, exitedOnItsOwn: false });

/**
 * Where the run is (runtime.md §4). A harness exists exactly in the phases that carry one, and has
 * said ready in `ready` and never in `starting` or `restarting`.
 */
export type Phase =
  /** Before run.prepare: no harness yet. */
  | { name: "idle" }
  /** A harness is up and has not said ready; its ready starts nothing (run.prepare's waits on it). */
  | { name: "starting"; harness: Harness }
  /** A crashed harness's replacement, until its ready: then it resumes the session, and the turn. */
  | { name: "restarting"; harness: Harness }
  /**
   * A restarted durable runner's new harness, until it answers the session load; a turn.start
   * that comes meanwhile waits in `deferredTurn`.
   */
  | { name: "recovering"; harness: Harness; ready: boolean; resume: WarmResume; deferredTurn: StartTurn | null }
  /** The harness said ready: commands go to it. */
  | { name: "ready"; harness: Harness }
  /**
   * runner.suspend: the harness group is ended (`harness` until it is gone) and no terminal is
   * decided — the session stays for a later resume. `ready`: whether that harness said ready, as
   * its ready timer may still expire while it is being ended.
   */
  | { name: "suspended"; harness: Harness | null; ready: boolean }
  /** run.terminal was emitted: nothing follows. */
  | { name: "ended" };

/** The harness the run has in this phase, or null. */
export function harnessOf(phase: Phase): Harness | null {
  return phase.name === "idle" || phase.name === "ended" ? null : phase.harness;
}

/** Whether the phase's harness said ready; a phase without one waits for none. */
export function saidReady(phase: Phase): boolean {
  switch (phase.name) {
    case "starting":
    case "restarting":
      return false;
    case "recovering":
    case "suspended":
      return phase.ready;
    default:
      return true;
  }
}

/** What the runner keeps of a request it has seen created (the request schema dispatches on schema). */
export interface PendingRequest {
  schema: string;
  requestId: string;
  input?: T.PRPQuestionSet;
}
