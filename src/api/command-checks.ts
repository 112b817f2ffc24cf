import type { CommandRow, DispatchRow, RunSnapshot } from "../authority/store.js";
import { decodeValue } from "../contract/decode.js";
import type { PRPQuestionSet } from "../contract/generated/types.js";
import { actionForChoice } from "../contract/permission-choices.js";
import { isPlainObject } from "../contract/plain-object.js";
import { responseMismatch } from "../contract/question-rules.js";
import type { SessionSnapshot } from "../reducer/snapshot.js";
import type { RequestDetail } from "./run-facts.js";

/** The resolutions a request may be given (run-machine checks an input's response again). */
const ACTIONS = new Set(["accept", "accept_for_session", "decline", "cancel", "submit"]);

export interface CommandProblem {
  code: string;
  path: string;
  message: string;
}

/**
 * Whether a run may take a command at all: once its run.terminal is committed its runner is
 * gone, and a command queued then would wait forever. So is one whose dispatch ended (cancelled
 * while queued, its worker lost too often): no runner will ever take it.
 */
export function endedRunProblem(
  run: Pick<RunSnapshot, "identity" | "terminalSourceSeq">,
  dispatch: Pick<DispatchRow, "state" | "endReason" | "endDetail"> | null = null,
): CommandProblem | undefined {
  if (run.terminalSourceSeq !== null)
    return {
      code: "run_ended",
      path: "/runId",
      message: `run ${run.identity.runId} has ended (run.terminal is committed): it takes no more commands`,
    };
  if (dispatch?.state === "ended")
    return {
      code: "run_ended",
      path: "/runId",
      message: `run ${run.identity.runId} has ended (${dispatch.endReason ?? "ended"}${dispatch.endDetail ? `: ${dispatch.endDetail}` : ""}): no runner will serve it`,
    };
  return undefined;
}

/**
 * A request.resolve answers a request the run has asked (the reduced session knows it) and
 * that nobody answered yet: not resolved in the session, and no answer queued for it that the
 * runner has not rejected (a rejected answer left the request pending, so it may be answered
 * again). And the answer fits the request as the harness asked it (`asked`): an action the
 * runner knows; for a permission with choices, one of its choices, with the action that choice
 * means; for a question set, a question response that fits it; for a plain question, some text.
 */
export function answerProblem(
  session: Pick<SessionSnapshot, "requests">,
  commands: readonly Pick<CommandRow, "type" | "payload" | "status">[],
  payload: Record<string, unknown>,
  asked?: (requestId: string) => RequestDetail | undefined,
): CommandProblem | undefined {
  const { requestId } = payload;
  if (typeof requestId !== "string" || requestId === "")
    return {
      code: "invalid_request",
      path: "/payload/requestId",
      message: "name the request: requestId is a non-empty string",
    };
  const request = session.requests.find((r) => r.requestId === requestId);
  if (!request)
    return { code: "unknown_request", path: "/payload/requestId", message: `the run has no request ${requestId}` };
  const queued = commands.some(
    (c) =>
      c.type === "request.resolve" &&
      c.status !== "rejected" &&
      (JSON.parse(c.payload) as { requestId?: unknown }).requestId === requestId,
  );
  if (request.status !== "pending" || queued)
    return {
      code: "request_already_answered",
      path: "/payload/requestId",
      message: `request ${requestId} is already answered; an answer is sent once`,
    };
  return resolutionProblem(request.type, asked?.(requestId), payload.resolution);
}

const invalidAnswer = (path: string, message: string): CommandProblem => ({ code: "invalid_answer", path, message });

function resolutionProblem(type: string, asked: RequestDetail | undefined, resolution: unknown) {
  if (!isPlainObject(resolution) || typeof resolution.action !== "string" || !ACTIONS.has(resolution.action))
    return invalidAnswer("/payload/resolution/action", `resolution.action must be one of ${[...ACTIONS].join(", ")}`);
  const choices = asked?.choices.map((c) => c.key) ?? [];
  const { action, choice } = resolution;
  if (choices.length > 0 && (choice !== undefined || action === "accept" || action === "accept_for_session")) {
    if (typeof choice !== "string" || !choices.includes(choice))
      return invalidAnswer("/payload/resolution/choice", `choose one of ${choices.join(", ")}`);
    // The choice decides the action (allow_always is accept_for_session): a mismatch would grant something else.
    if (actionForChoice(choice) !== action)
      return invalidAnswer(
        "/payload/resolution/action",
        `choice ${choice} is answered with action ${actionForChoice(choice)}`,
      );
  }
  if (action === "submit" && asked?.input) return responseProblem(asked.input, resolution.response);
  if (action === "submit" && type === "input" && (typeof resolution.text !== "string" || resolution.text.trim() === ""))
    return invalidAnswer("/payload/resolution/text", "an answer to a question needs some text");
  return undefined;
}

/** A question set is answered with a question response that fits it, as the runner checks it. */
function responseProblem(set: PRPQuestionSet, response: unknown): CommandProblem | undefined {
  const decoded = decodeValue(response, { kind: "question-response" });
  if (!decoded.ok)
    return invalidAnswer(
      `/payload/resolution/response${decoded.error.path}`,
      `answer the question set with a question response: ${decoded.error.message}`,
    );
  const mismatch = responseMismatch(set, decoded.value, "/payload/resolution/response");
  return mismatch ? invalidAnswer(mismatch.path, mismatch.message) : undefined;
}
