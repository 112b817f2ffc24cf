import type { CommandRow, RunSnapshot } from "../authority/store.js";
import type { SessionSnapshot } from "../reducer/snapshot.js";

export interface CommandProblem {
  code: string;
  path: string;
  message: string;
}

/**
 * Whether a run may take a command at all: once its run.terminal is committed its runner is
 * gone, and a command queued then would wait forever.
 */
export function endedRunProblem(run: Pick<RunSnapshot, "identity" | "terminalSourceSeq">): CommandProblem | undefined {
  if (run.terminalSourceSeq === null) return undefined;
  return {
    code: "run_ended",
    path: "/runId",
    message: `run ${run.identity.runId} has ended (run.terminal is committed): it takes no more commands`,
  };
}

/**
 * A request.resolve answers a request the run has asked (the reduced session knows it) and
 * that nobody answered yet: not resolved in the session, and no answer queued for it that the
 * runner has not rejected (a rejected answer left the request pending, so it may be answered again).
 */
export function answerProblem(
  session: Pick<SessionSnapshot, "requests">,
  commands: readonly Pick<CommandRow, "type" | "payload" | "status">[],
  payload: Record<string, unknown>,
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
  return undefined;
}
