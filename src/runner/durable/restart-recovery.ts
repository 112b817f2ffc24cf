import type { RunController } from "../run-controller.js";
import type { RunnerState } from "./runner-state.js";

/**
 * After a restart the harness of the previous process is gone. When it had a session whose
 * turn was not over, and its agent reported whether it can load sessions (an ACP agent), a
 * new harness resumes that session (warm resume, runtime.md §8.3), or the run fails closed
 * saying why. Otherwise a run whose prepare was journaled cannot go on: it ends with the
 * runner's own facts (no harness exit, no result). Either way the authority gets one terminal.
 */
export function recoverAfterRestart(state: RunnerState, controller: RunController): void {
  const prepared = state.journaled("run.prepare");
  const r = state.recovery();
  const resumable = prepared && r.driverSessionId !== null && r.loadSession !== null && !r.turnEnded;
  controller.emitRunnerEvent("runner.reconciled", {
    outcome: "same_durable_session_resumed",
    harness: prepared ? "lost" : "not_started",
    ...(resumable ? { session: "resuming" } : {}),
  });
  // The current goal state, sent again so that a v2+ peer sees it whatever it acknowledged (runtime.md §9).
  for (const retained of state.retainedGoalEvents()) controller.emitRunnerEvent(retained.eventType, retained.payload);
  controller.resumeCredentials();
  if (resumable) {
    const turn = r.turnId !== null || state.journaled("turn.start") ? { turnId: r.turnId } : null;
    controller.recover({ driverSessionId: r.driverSessionId!, loadSession: r.loadSession!, turn });
  } else if (prepared) void controller.stop(null);
}
