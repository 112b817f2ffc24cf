import { spanWords } from "../../contract/stall-words.js";
import type { HarnessFact } from "../../harness/harness-driver.js";
import type { RunState } from "./run-state.js";

/**
 * The default stall limit: 15 minutes with no progress reported. Long tool calls exist (a build,
 * a test suite), and one that reports updates is progress; a quarter of an hour of total silence
 * during a turn is a stuck agent far more often than a slow one.
 */
export const DEFAULT_STALL_LIMIT_MS = 15 * 60_000;
/** How long a stalled run's harness has to honour the interrupt before the run is cancelled. */
export const DEFAULT_STALL_GRACE_MS = 30_000;
/**
 * The longest limit or grace: 7 days (RunSpec's maximum too). Past 2^31 - 1 ms a Node timer
 * fires at once, which would turn a huge limit into an immediate stall.
 */
export const MAX_STALL_MS = 604_800_000;

/** The stall policy of a run: no progress for `limitMs` → interrupt, then cancel after `graceMs`. */
export interface StallPolicy {
  /** 0 turns the watch off. */
  limitMs: number;
  graceMs: number;
}

/** The stopReason of a stalled run: readers (metrics, API, console) key on `code`. */
export const STALL_STOP = { kind: "stall", code: "stalled" } as const;

/**
 * Whether a harness fact is progress. A live process is not progress, nor is the driver's own
 * note on its harness (harness.diagnostic: e.g. noise it could not read); anything the harness
 * reports about the work — an event, a result, a terminal proposal, a goal — is.
 */
export function isProgress(fact: HarnessFact): boolean {
  switch (fact.kind) {
    case "event":
      return fact.eventType !== "harness.diagnostic";
    case "result":
    case "terminal_proposal":
    case "goal":
      return true;
    default:
      return false;
  }
}

/**
 * Whether the stall clock runs now: a turn is under way, nobody is waiting on a person (an open
 * request pauses it: the silence is the person's, not the agent's), and nothing has yet decided
 * how the run ends (an interrupt, a cancel, a stall already seen, a harness that exited by itself).
 */
function watching(run: RunState): boolean {
  const policy = run.options.stall;
  if (!policy || policy.limitMs <= 0 || run.ended || run.stalled) return false;
  if (!run.turn || run.turn.ended || run.pendingRequests.size > 0 || run.intent) return false;
  const phase = run.phase.name;
  return phase !== "suspended" && !run.harness?.exitedOnItsOwn;
}

/**
 * Brings the stall timer in line with the run after one input: restarted on progress (and when
 * it starts to run), stopped when the watch pauses. The machine has no clock: the timer is an
 * effect, so the silent time at expiry is exactly the limit.
 */
export function syncStallWatch(run: RunState, progressed: boolean): void {
  if (watching(run)) {
    if (progressed || !run.stallArmed) {
      run.stallArmed = true;
      run.do({ kind: "arm_timer", timer: "stall", ms: run.options.stall!.limitMs });
    }
  } else if (run.stallArmed) {
    run.stallArmed = false;
    // An ended run's timers are all stopped by its `ended` effect.
    if (!run.ended) run.do({ kind: "disarm_timer", timer: "stall" });
  }
}

/**
 * The limit passed with no progress: say so (a runner.diagnostic `run_stalled` with the limit and
 * the silent time), interrupt the turn the way `turn.interrupt` does, and give the harness the
 * grace to end it. The terminal carries stopReason `stalled` whichever way the run then ends.
 */
export function onStall(run: RunState): void {
  run.stallArmed = false;
  if (!watching(run)) return; // a fact in the same tick already paused or ended the watch
  const { limitMs, graceMs } = run.options.stall!;
  run.stalled = true;
  const silent = `no progress reported for ${spanWords(limitMs)} during turn ${run.turn!.id}`;
  const message = `${silent}: the turn is interrupted, and the run is cancelled if it has not ended within ${spanWords(graceMs)}`;
  run.emit("runner.diagnostic", { code: "run_stalled", message, limitMs, silentMs: limitMs, graceMs });
  run.stopCause ??= { receiptId: `stop_${run.options.runId}`, ...STALL_STOP, message: silent };
  run.runnerIntent("interrupted");
  run.do({ kind: "interrupt", reason: "stalled" });
  run.do({ kind: "arm_timer", timer: "stall_grace", ms: graceMs });
}

/** The grace passed and the stalled run has not ended: it is cancelled (the `run.cancel` path). */
export function onStallGrace(run: RunState): void {
  if (run.ended || !run.stalled) return;
  // The policy reached its second step: the terminal says cancelled, not interrupted.
  if (run.intent === "interrupted") run.intent = "cancelled";
  run.emit("runner.diagnostic", {
    code: "run_stall_cancelled",
    message: `the stalled turn did not end within ${spanWords(run.options.stall!.graceMs)} of its interrupt: the run is cancelled`,
  });
  run.stopRun(null);
}
