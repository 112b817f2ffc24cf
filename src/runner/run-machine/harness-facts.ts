import { decodeValue } from "../../contract/decode.js";
import { TURN_ENDS } from "../../contract/turn-ends.js";
import type { GoalChange, HarnessFact, HarnessGone } from "../../harness/harness-driver.js";
import type { RunState } from "./run-state.js";
import { saidReady, type PendingRequest } from "./state.js";

/** The event each goal change of the harness is reported as (runtime.md §9). */
const GOAL_EVENT: Record<GoalChange, string> = {
  snapshot: "session.goal.snapshot",
  updated: "session.goal.updated",
  cleared: "session.goal.cleared",
};
/** Event families only the runner may report; a harness that sends one is not believed. */
const RUNNER_OWNED = /^(run|harness|runner)\./;

/** What the harness reported, believed only from a harness that has kept the protocol. */
export function onFact(run: RunState, fact: HarnessFact): void {
  if (run.ended || run.harness?.trusted === false) return;
  switch (fact.kind) {
    case "exited": {
      const harness = run.harness;
      if (harness && !harness.stopping && fact.exit.signal === null) harness.exitedOnItsOwn = true;
      break;
    }
    case "ready":
      onReady(run, fact.pid, fact.resumePoint, fact.agent);
      break;
    case "event":
      onHarnessEvent(run, fact);
      break;
    case "result":
      onResult(run, fact.payload);
      break;
    case "terminal_proposal":
      if (run.proposal)
        run.emit("harness.diagnostic", {
          code: "duplicate_terminal_ignored",
          message: "the harness proposed a second terminal; the first one stands",
        });
      else run.proposal = fact.payload;
      break;
    case "violation":
      run.violation(fact.message, fact.code);
      break;
    case "start_failed":
      run.agentStartFailed(fact.code, fact.message, fact.noProcess === true);
      break;
    case "goal":
      run.emit(GOAL_EVENT[fact.change], fact.change === "cleared" ? {} : { goal: fact.goal });
      break;
  }
}

function onReady(
  run: RunState,
  pid: number,
  resumePoint: Record<string, unknown>,
  agent?: Record<string, unknown>,
): void {
  const phase = run.phase;
  run.harnessReady();
  run.do({ kind: "disarm_timer", timer: "ready" });
  run.emit("harness.ready", {
    pid,
    ...(run.harnessRestarts > 0 ? { restart: run.harnessRestarts } : {}),
    ...(agent ? { agent } : {}),
  });
  if (phase.name === "recovering") {
    run.do({ kind: "open_session", resume: true, resumeSessionId: phase.resume.driverSessionId });
    run.do({ kind: "arm_timer", timer: "session_started", ms: run.loadWaitMs() });
  } else if (phase.name === "restarting") {
    // The replacement resumes the session where its predecessor stopped (§5.10 harness-restart).
    run.do({ kind: "open_session", resume: true });
    run.emit("session.reconciled", { ...resumePoint, restart: run.harnessRestarts });
    run.announceGoals();
    if (run.turn) run.do({ kind: "start_turn", turnId: run.turn.id });
  }
  if (run.waitingFor === "ready") run.commandDone();
}

function onHarnessEvent(run: RunState, e: Extract<HarnessFact, { kind: "event" }>): void {
  if (e.eventType === "harness.diagnostic") return run.emit(e.eventType, e.payload); // the driver's own note on its harness
  if (RUNNER_OWNED.test(e.eventType))
    return run.violation(`harness may not report ${e.eventType}: the runner reports run, harness and runner events`);
  if (e.eventType === "runtime_request.created") {
    const request = decodeValue(e.payload.request, { kind: "request" });
    if (!request.ok)
      return run.violation(
        `harness request is not a valid request: ${request.error.path || "/"}: ${request.error.message}`,
      );
    const r = e.payload.request as PendingRequest;
    run.pendingRequests.set(r.requestId, r);
  } else if (e.eventType === "runtime_request.resolved" || e.eventType === "runtime_request.cancelled") {
    run.pendingRequests.delete(String(e.payload.requestId));
  } else if (TURN_ENDS.has(e.eventType) && run.turn) {
    run.turn.ended = true;
  }
  run.out.push({
    kind: "emit",
    eventType: e.eventType,
    payload: e.payload,
    ...(e.turnId ? { turnId: e.turnId } : run.turnIds()),
    ...(e.itemId ? { itemId: e.itemId } : {}),
    fromHarness: true,
  });
  const failed = e.eventType === "session.failed";
  if (!failed && !(e.eventType === "runtime.phase.changed" && e.payload.phase === "executing")) return;
  // The session has started (or failed to): session.open's effect has happened, a load is answered.
  const recovering = run.phase.name === "recovering";
  if (!failed && (run.waitingFor === "session_started" || recovering)) run.announceGoals();
  if (run.waitingFor === "session_started") run.commandDone();
  if (recovering) resumed(run, failed ? String(e.payload.message ?? "the agent gave no reason") : null);
}

function onResult(run: RunState, payload: Record<string, unknown>): void {
  if (run.result)
    return run.emit("harness.diagnostic", {
      code: "duplicate_semantic_result_ignored",
      message: "the harness proposed a second result; the first one stands",
    });
  // Checked here, not only at emission: the reconciliation relies on a valid result.
  const checked = decodeValue(payload, { kind: "result" });
  if (!checked.ok)
    return run.violation(
      `harness result is not a valid run result: ${checked.error.path || "/"}: ${checked.error.message}`,
    );
  run.result = checked.value;
  run.out.push({ kind: "emit", eventType: "run.result.proposed", payload, ...run.turnIds(), fromHarness: true });
}

/**
 * The recovering harness answered the session load (runtime.md §8.3): `failure` says why it
 * could not, or null. A turn that was under way when the runner died is indeterminate: it is
 * reported failed, never sent again, and the run ends.
 */
export function resumed(run: RunState, failure: string | null): void {
  const phase = run.phase;
  if (phase.name !== "recovering") return;
  run.sessionLoaded();
  run.do({ kind: "disarm_timer", timer: "session_started" });
  const id = phase.resume.driverSessionId;
  if (failure !== null) {
    run.failClosed(
      "runner_restarted",
      "session_resume_failed",
      `the runner restarted, and the agent could not resume session ${id}: ${failure}`,
    );
  } else if (phase.resume.turn && run.turn) {
    const message = `the runner restarted during turn ${run.turn.id}: whether the agent finished it is unknown, and its prompt is not sent again`;
    run.emit("turn.failed", { code: "turn_indeterminate", message }, { turnId: run.turn.id });
    run.turn.ended = true;
    run.failClosed("runner_restarted", "turn_indeterminate", message);
  } else if (phase.deferredTurn) {
    run.do(phase.deferredTurn);
  }
}

/** The harness is gone: restart it after a crash, report a suspension, or end the run. */
export function onGone(run: RunState, gone: HarnessGone): void {
  const phase = run.phase;
  const harness = run.harness;
  run.do({ kind: "disarm_timer", timer: "ready" });
  if (run.ended) return;
  const exited = { ...gone.exit, semanticResultObserved: run.result !== null, log: gone.log };
  if (phase.name === "suspended") {
    run.suspensionDone();
    run.emit("harness.exited", { ...exited, suspended: true });
    if (run.waitingFor === "gone") run.commandDone();
    return;
  }
  if (!saidReady(phase) && !run.intent && harness?.trusted !== false)
    run.blame(`harness did not say ready: it exited (${JSON.stringify(gone.exit)}) first`);
  // The requests of a harness that is gone can never be answered: none stays pending.
  run.cancelPending(
    `the harness that asked it is gone (${gone.exit.signal ? `signal ${gone.exit.signal}` : `exit code ${gone.exit.exitCode}`})`,
  );
  // A driver that ended its harness on purpose (an ACP agent after its turn) reports success: no crash.
  // An exit the driver caused, or any exit once the turn is being interrupted or the run
  // cancelled, is not a crash either: restarting would send the turn's prompt again.
  const crashed =
    !harness?.stopping &&
    !gone.endedByDriver &&
    !run.intent &&
    gone.exit.signal !== null &&
    !gone.exit.success &&
    run.sessionOpened;
  if (crashed && run.harnessRestarts < (run.options.harnessRestartLimit ?? 1)) {
    run.emit("harness.exited", { ...exited, restarting: true });
    run.restartHarness();
    return;
  }
  run.emit("harness.exited", exited);
  run.finish(gone);
}
