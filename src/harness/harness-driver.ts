import type { AgentStartCause } from "../agents/start-causes.js";
import type * as T from "../contract/generated/types.js";
import type { ExitFact } from "./supervisor.js";
import type { LogTailSnapshot } from "./log-tail.js";

/**
 * What a harness reports, whatever it speaks (the fake harness's JSONL, an ACP agent's
 * JSON-RPC, …). The driver translates its harness into these facts; the run machine decides
 * what they mean for the run and which PRP events follow.
 */
export type HarnessFact =
  /**
   * The harness is up and accepts a session; `pid` is its process group. `resumePoint` says
   * where a replacement harness resumes its predecessor's session (session.reconciled).
   * `agent` is what the harness says about itself (an ACP agent's info, capabilities and auth
   * methods), reported in harness.ready.
   */
  | { kind: "ready"; pid: number; resumePoint: Record<string, unknown>; agent?: Record<string, unknown> }
  /** A PRP event the harness reports (never a runner-owned family: the machine refuses those). */
  | { kind: "event"; eventType: string; payload: Record<string, unknown>; turnId?: string; itemId?: string }
  /** A semantic run result the harness proposes (becomes run.result.proposed). */
  | { kind: "result"; payload: Record<string, unknown> }
  /** A terminal the harness proposes: only a proposal, the runner decides (runtime.md §4.4). */
  | { kind: "terminal_proposal"; payload: Record<string, unknown> }
  /**
   * Something the harness did that its protocol forbids: the harness is not believed again.
   * `code`, when the driver names the reason, becomes the terminal's stopReason code.
   */
  | { kind: "violation"; message: string; code?: string }
  /**
   * The agent cannot start the run (runtime.md §4.4: the harness process failed), for a typed
   * cause the terminal carries as stopReason `{kind: "agent_start", code}`. `noProcess`: none
   * was started, so no `gone` follows.
   */
  | { kind: "start_failed"; code: AgentStartCause; message: string; noProcess?: boolean }
  /**
   * The harness's session goal (runtime.md §9): `snapshot` answers a get, `updated` follows a
   * change (a set, or the harness's own), `cleared` follows a clear.
   */
  | { kind: "goal"; change: GoalChange; goal: T.SessionGoalSnapshot | null }
  /**
   * The harness's leader has exited, before its output is drained and its group reaped (`gone`
   * follows): from here on the run's outcome is the harness's own, whatever stops it later.
   */
  | { kind: "exited"; exit: ExitFact };

/**
 * The harness is gone: its process group ended and every line it wrote was delivered. `log`
 * is the bounded tail of what it wrote to stderr and as log messages.
 */
export interface HarnessGone {
  exit: ExitFact;
  log: LogTailSnapshot;
  /** The driver ended the harness itself (a turn that would not settle after a cancel): not a crash to restart. */
  endedByDriver?: boolean;
}

/** Where a driver sends what its harness reports. */
export interface HarnessListener {
  fact(fact: HarnessFact): void;
  gone(gone: HarnessGone): void;
}

/** What the runner needs to open or reopen a harness session. */
export interface SessionOpen {
  normalizedSessionId: string;
  driverSessionId: string;
  /** True when a replacement harness resumes the session of one that crashed. */
  resume: boolean;
  /**
   * The harness's own session a restarted durable runner recorded (warm resume): the new
   * harness loads this one, or reports session.failed; it never starts another.
   */
  resumeSessionId?: string;
}

export type GoalChange = "snapshot" | "updated" | "cleared";

/** A session goal command as the harness receives it (wire.md §8.3): a field left out of a set stays as it is. */
export type GoalOperation =
  | { action: "get" }
  | { action: "set"; objective?: string; status?: "active" | "paused"; tokenBudget?: number | null }
  | { action: "clear" };

/** What a harness without session goals advertises (a missing capability means unsupported). */
export const GOALS_UNSUPPORTED: T.SessionGoalCapability = { availability: "unsupported", actions: [] };

/**
 * The seam between a runner and the harness it drives (runtime.md §4.3). One driver owns one
 * harness at a time; `start` may be called again after the previous harness is gone (a
 * restart). Calls never wait on the harness: answers come back as facts, in order.
 * Requests the harness makes (permissions, questions) are correlated by `requestId`: the
 * driver remembers how to answer each one and `resolveRequest` answers it.
 */
export interface HarnessDriver {
  /** Which driver this is, for harness.starting (e.g. `fake`, `acp`). */
  readonly kind: string;
  /** The command line harness.starting reports. */
  readonly command: string;
  /** Starts a harness in its own process group; `ready` or `gone` follows. */
  start(listener: HarnessListener): void;
  openSession(open: SessionOpen): void;
  startTurn(turn: { turnId: string; text?: string }): void;
  /**
   * turn.steer as a queued follow-up (absent: unsupported, the runner refuses it): `text` is
   * sent to the harness within the active turn once its current prompt is answered. A turn that
   * ends otherwise drops what is queued, saying so in a harness.diagnostic.
   */
  steer?(text: string): void;
  interrupt(reason: string): void;
  resolveRequest(requestId: string, resolution: Record<string, unknown>): void;
  /**
   * The session goal actions this harness has (runtime.md §9), from what the harness is, never
   * from a model or adapter name. Absent means unsupported.
   */
  readonly sessionGoals?: T.SessionGoalCapability;
  /** Carries out a goal operation the capability advertises; a `goal` fact answers it. */
  goal?(operation: GoalOperation): void;
  /** Ends the harness's whole group; `gone` follows once it has exited and its output is read. */
  stop(): void;
  /** Stops reading the harness's output (its pipe fills and it blocks) until `resume`. */
  pause(): void;
  resume(): void;
}
