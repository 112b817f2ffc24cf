import { cutText } from "../../../contract/text-cut.js";
import type { MessageItems } from "./items.js";
import type { OpenRequests } from "./requests.js";
import { reviewResult } from "./review-result.js";
import type { RpcError } from "./rpc.js";
import type { SessionBinding } from "./session.js";
import type { ProjectionState } from "./state.js";
import type { ToolCalls } from "./tools.js";
import type { Obj } from "./wire.js";

/** The parts a turn's end closes, in the order it closes them. */
export interface TurnParts {
  session: SessionBinding;
  requests: OpenRequests;
  items: MessageItems;
  tools: ToolCalls;
}

const STOP_FAILURES: Record<string, string> = {
  max_tokens: "the agent stopped: it reached its token limit",
  max_turn_requests: "the agent stopped: it reached its limit of model requests for one turn",
  refusal: "the agent refused to continue",
};

/** The prompt answered: open items flush (the answer on the final channel), then the turn ends as the stop reason says. */
export function promptAnswered(
  state: ProjectionState,
  parts: TurnParts,
  result: Obj | null,
  error: RpcError | null,
): void {
  if (!state.turnOpen) return;
  state.turnOpen = false;
  parts.requests.cancelAll(state, "the turn ended while the agent was still waiting on it");
  const stopReason = result?.stopReason;
  if (!error && stopReason === "end_turn" && state.followUps > 0 && !parts.session.cancelling) {
    // This prompt's answer is not the turn's last: the driver sends the queued follow-up next.
    flushTurn(state, parts, false, "interrupted");
    state.awaitingFollowUp = true;
    return;
  }
  dropFollowUps(state, "the turn ended");
  flushTurn(state, parts, !error, stopReason === "cancelled" ? "cancelled" : "interrupted");
  if (error) {
    state.turnEvent("turn.failed", error);
  } else if (stopReason === "end_turn") {
    state.turnEvent("turn.completed", { stopReason });
    state.emit({ kind: "result", payload: reviewResult(parts.items.finalText) });
  } else if (stopReason === "cancelled") {
    const why = parts.session.cancelling ?? { why: "interrupt", reason: "agent" };
    state.turnEvent(why.why === "interrupt" ? "turn.interrupted" : "turn.cancelled", {
      reason: why.reason,
      stopReason,
    });
  } else {
    const text = typeof stopReason === "string" ? STOP_FAILURES[stopReason] : undefined;
    state.turnEvent("turn.failed", {
      code: typeof stopReason === "string" && text ? stopReason : "unknown_stop_reason",
      message: text ?? `the agent ended the turn with stop reason ${cutText(String(JSON.stringify(stopReason)), 80)}`,
      stopReason: stopReason ?? null,
    });
  }
}

/**
 * The driver is cancelling a turn that waits for its follow-up's prompt: no prompt is out, so
 * the turn ends here, as it was asked to.
 */
export function followUpCancelled(state: ProjectionState, parts: TurnParts): void {
  const cancelling = parts.session.cancelling;
  if (!state.awaitingFollowUp || !cancelling) return;
  state.awaitingFollowUp = false;
  dropFollowUps(state, "the turn was cancelled");
  state.turnEvent(cancelling.why === "interrupt" ? "turn.interrupted" : "turn.cancelled", {
    reason: cancelling.reason,
  });
}

/** Queued follow-ups of a turn that ends otherwise are never sent: a diagnostic says so. */
export function dropFollowUps(state: ProjectionState, why: string): void {
  if (state.followUps === 0) return;
  state.diagnostic(
    "acp_follow_up_dropped",
    `${why} before ${state.followUps} queued follow-up${state.followUps === 1 ? " was" : "s were"} sent to the agent: dropped`,
  );
  state.followUps = 0;
}

/** The agent process is gone: its requests are cancelled, and a turn it cannot carry on ends. */
export function agentExited(state: ProjectionState, parts: TurnParts, exit: string, restartable: boolean): void {
  // Nobody may answer this process's requests any more: a replacement's own requests get other ids.
  parts.requests.cancelAll(state, `the agent process that asked it is gone (${exit})`);
  // A replacement agent is given the turn's first prompt again, not this process's queue.
  dropFollowUps(state, `the agent process exited (${exit})`);
  if ((state.turnOpen || state.awaitingFollowUp) && !restartable) {
    state.turnOpen = false;
    state.awaitingFollowUp = false;
    const cancelling = parts.session.cancelling;
    if (cancelling) {
      // The driver ended an agent that did not settle its cancelled turn: the turn ends as it was asked to.
      flushTurn(state, parts, false, "cancelled");
      state.turnEvent(cancelling.why === "interrupt" ? "turn.interrupted" : "turn.cancelled", {
        reason: cancelling.reason,
        message: `the agent did not end its turn after session/cancel, so it was ended (${exit})`,
      });
    } else {
      flushTurn(state, parts, false, "interrupted");
      state.turnEvent("turn.failed", {
        code: "agent_exited",
        message: `the agent exited in the middle of the turn (${exit})`,
      });
    }
  }
  // A replacement agent carries the turn on without this process's calls: they ended here.
  parts.tools.settle(state);
}

/**
 * Completes the turn's open items — the assistant message on the `final` channel when the
 * agent answered (seed 002 rule 7) — and ends tool calls still running with `toolStatus`.
 */
function flushTurn(
  state: ProjectionState,
  parts: TurnParts,
  answered: boolean,
  toolStatus: "cancelled" | "interrupted",
): void {
  parts.items.flush(state, answered);
  parts.tools.close(state, toolStatus);
}
