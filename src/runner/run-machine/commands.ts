import { decodeValue } from "../../contract/decode.js";
import type * as T from "../../contract/generated/types.js";
import type { PrpCommand } from "../../contract/kinds.js";
import { responseMismatch } from "../../contract/question-rules.js";
import { commandVersionRefusal } from "../../contract/version-gates.js";
import { GOALS_UNSUPPORTED, type GoalOperation } from "../../harness/harness-driver.js";
import type { RunState } from "./run-state.js";

/** The PRP command types a run acts on. */
export const SUPPORTED_COMMANDS: ReadonlySet<string> = new Set([
  "run.prepare",
  "session.open",
  "turn.start",
  "turn.steer",
  "turn.interrupt",
  "turn.stop",
  "request.resolve",
  "run.cancel",
  "session.goal.get",
  "session.goal.set",
  "session.goal.clear",
]);

export type Refusal = { code: string; reason: string } | null;

const no = (code: string, reason: string) => ({ code, reason });

/** Why an admitted command cannot take effect now, or null. Its sequence number stays used. */
export function refusal(run: RunState, command: PrpCommand): Refusal {
  if (run.ended) return no("run_terminal", "the run has ended");
  // A v1 peer never gets a v2 command carried out: refused before any harness work (wire.md D2).
  const tooNew = commandVersionRefusal(command, run.protocolVersion);
  if (tooNew) return tooNew;
  switch (command.type) {
    case "run.prepare":
      return run.prepared ? no("already_prepared", "the run is already prepared") : null;
    case "session.open":
      if (!run.prepared) return no("not_prepared", "session.open needs run.prepare first");
      return run.sessionOpened ? no("session_already_open", "the session is already open") : null;
    case "turn.start":
      if (!run.sessionOpened) return no("session_not_open", "turn.start needs session.open first");
      return run.turn ? no("turn_already_started", `turn ${run.turn.id} is already started; a run has one turn`) : null;
    case "turn.steer":
      return steerRefusal(run, command.payload as Record<string, unknown>);
    case "turn.interrupt":
    case "turn.stop":
      return run.turn && !run.turn.ended ? null : no("no_active_turn", "there is no active turn to interrupt");
    case "request.resolve":
      return resolutionRefusal(run, command.payload as Record<string, unknown>);
    case "session.goal.get":
    case "session.goal.set":
    case "session.goal.clear": {
      if (!run.sessionOpened) return no("session_not_open", `${command.type} needs session.open first`);
      const action = goalAction(command);
      const capability = run.options.sessionGoals ?? GOALS_UNSUPPORTED;
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

/**
 * turn.steer is a queued follow-up: the harness sends its text once the active turn's prompt
 * is answered, within the same turn (a run has one turn). Only a harness that can do that takes it.
 */
function steerRefusal(run: RunState, payload: Record<string, unknown>): Refusal {
  if (typeof payload.text !== "string" || payload.text.trim() === "")
    return no("invalid_payload", "turn.steer needs payload.text: the follow-up's words");
  if (!run.turn || run.turn.ended)
    return no("no_active_turn", "there is no active turn to follow up: a run has one turn, start a new run");
  if (!run.options.followUps)
    return no(
      "steer_unsupported",
      `this harness (${run.options.harnessKind ?? run.options.harnessCommand}) cannot take a follow-up: run an ACP agent (command or profile) to send one`,
    );
  return null;
}

function resolutionRefusal(run: RunState, payload: Record<string, unknown>): Refusal {
  const request = run.pendingRequests.get(String(payload.requestId));
  if (!request) return no("unknown_request", `no pending request ${JSON.stringify(payload.requestId)}`);
  const resolution = payload.resolution as Record<string, unknown> | undefined;
  if (!resolution || typeof resolution.action !== "string")
    return no("invalid_resolution", "resolution.action is required");
  if (request.input && resolution.action === "submit") {
    const response = decodeValue(resolution.response, { kind: "question-response" });
    if (!response.ok)
      return no(response.error.code, `resolution.response${response.error.path}: ${response.error.message}`);
    const mismatch = responseMismatch(request.input, response.value, "/resolution/response");
    if (mismatch) return no(mismatch.code, `${mismatch.path}: ${mismatch.message}`);
  }
  return null;
}

/** Carries out a command `refusal` accepted; `command_done` says when its effect has happened. */
export function apply(run: RunState, command: PrpCommand): void {
  const payload = command.payload as Record<string, unknown>;
  switch (command.type) {
    case "run.prepare":
      run.prepared = true;
      run.emit("runtime.phase.changed", { phase: "workspace_preparing" });
      run.emit("workspace.ready", {});
      run.emit("harness.starting", { command: run.options.harnessCommand });
      run.prepareHarness();
      break;
    case "session.open":
      run.sessionOpened = true;
      run.emit("session.starting", {});
      run.do({ kind: "open_session", resume: false });
      if (run.harness) {
        // Hold the next command until the harness answers: session.started, then the phase
        // `executing` (§4.3). Otherwise turn.submitted could land between the two.
        run.waitingFor = "session_started";
        run.do({ kind: "arm_timer", timer: "session_started", ms: run.options.commandWaitMs ?? 10_000 });
      } else run.do({ kind: "command_done" });
      break;
    case "turn.start": {
      const turnId =
        typeof payload.turnId === "string" && payload.turnId ? payload.turnId : `turn_${run.options.runId}_1`;
      run.turn = { id: turnId, ended: false };
      run.emit("turn.submitted", {}, { turnId });
      const start = {
        kind: "start_turn" as const,
        turnId,
        ...(typeof payload.text === "string" ? { text: payload.text } : {}),
      };
      run.startTurn(start);
      run.do({ kind: "command_done" });
      break;
    }
    case "turn.steer":
      run.do({ kind: "steer", text: String(payload.text) });
      run.do({ kind: "command_done" });
      break;
    case "turn.interrupt":
    case "turn.stop":
      run.runnerIntent("interrupted");
      run.do({ kind: "interrupt", reason: typeof payload.reason === "string" ? payload.reason : "operator" });
      run.do({ kind: "command_done" });
      break;
    case "request.resolve":
      run.do({
        kind: "resolve_request",
        requestId: String(payload.requestId),
        resolution: payload.resolution as Record<string, unknown>,
      });
      run.do({ kind: "command_done" });
      break;
    case "run.cancel":
      run.stopRun("cancelled");
      run.do({ kind: "command_done" });
      break;
    case "session.goal.get":
    case "session.goal.set":
    case "session.goal.clear":
      run.do({ kind: "goal", operation: goalOperation(command) });
      run.do({ kind: "command_done" });
      break;
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
