import { decodeValue } from "../contract/decode.js";
import type { PRPQuestionSet } from "../contract/generated/types.js";
import { isPlainObject } from "../contract/plain-object.js";
import { actionForChoice } from "../contract/permission-choices.js";
import { responseMismatch } from "../contract/question-rules.js";
import { CONSOLE_COMMANDS, type ApiResult, type CommandReceipt } from "./api-types.js";
import type { RunBook } from "./run-book.js";

const refuse = (code: string, path: string, message: string): ApiResult<never> => ({
  ok: false,
  error: { code, path, message },
});

/** The resolutions a request may be given (run-machine checks an input's response again). */
const ACTIONS = new Set(["accept", "accept_for_session", "decline", "cancel", "submit"]);

/**
 * A command a person sends from the page, checked against what the console knows of the run
 * before it is queued: a known live run, one of the console's commands, and for
 * request.resolve a well-formed answer to a request still pending and not already answered.
 * Then it goes through the authority's command queue, whose contract codec has the last word.
 */
export async function submitCommand(book: RunBook, runId: string, body: unknown): Promise<ApiResult<CommandReceipt>> {
  if (!book.has(runId)) return refuse("unknown_run", "/runId", `no run ${runId} here: open the runs list`);
  if (!isPlainObject(body)) return refuse("invalid_command", "", "send a JSON object {type, payload}");
  const { type, payload } = body;
  if (!(CONSOLE_COMMANDS as readonly unknown[]).includes(type))
    return refuse(
      "command_not_allowed",
      "/type",
      `the console sends ${CONSOLE_COMMANDS.join(", ")}, not ${JSON.stringify(type)}`,
    );
  if (!isPlainObject(payload)) return refuse("invalid_command", "/payload", "the payload must be a JSON object");
  if (!book.source.live) return book.source.queue(runId, type as string, payload);
  if (book.ended(runId))
    return refuse(
      "run_ended",
      "/runId",
      `run ${runId} has ended (run.terminal is committed): it takes no more commands`,
    );
  if (type === "request.resolve") {
    const problem = await answerProblem(book, runId, payload);
    if (problem) return problem;
  }
  return book.source.queue(runId, type as string, payload);
}

async function answerProblem(
  book: RunBook,
  runId: string,
  payload: Record<string, unknown>,
): Promise<ApiResult<never> | undefined> {
  const { requestId, resolution } = payload;
  if (typeof requestId !== "string" || requestId === "")
    return refuse("invalid_answer", "/payload/requestId", "name the request: requestId is a non-empty string");
  const request = book.session(runId)?.requests.find((r) => r.requestId === requestId);
  if (!request) return refuse("unknown_request", "/payload/requestId", `the run has no request ${requestId}`);
  // An answer the runner rejected left the request pending: it may be answered again.
  const queued = (await book.source.commands(runId)).some(
    (c) => c.type === "request.resolve" && c.requestId === requestId && c.status !== "rejected",
  );
  if (request.status !== "pending" || queued)
    return refuse(
      "request_already_answered",
      "/payload/requestId",
      `request ${requestId} is already answered; an answer is sent once`,
    );
  if (!isPlainObject(resolution) || typeof resolution.action !== "string" || !ACTIONS.has(resolution.action)) {
    return refuse(
      "invalid_answer",
      "/payload/resolution/action",
      `resolution.action must be one of ${[...ACTIONS].join(", ")}`,
    );
  }
  const asked = book.request(runId, requestId);
  const choices = asked?.choices.map((c) => c.key) ?? [];
  const { action, choice } = resolution;
  if (choices.length > 0 && (choice !== undefined || action === "accept" || action === "accept_for_session")) {
    if (!choices.includes(choice as string))
      return refuse("invalid_answer", "/payload/resolution/choice", `choose one of ${choices.join(", ")}`);
    // The choice decides the action (allow_always is accept_for_session): a mismatch would grant something else.
    if (actionForChoice(choice as string) !== action)
      return refuse(
        "invalid_answer",
        "/payload/resolution/action",
        `choice ${String(choice)} is answered with action ${actionForChoice(choice as string)}`,
      );
  }
  if (action === "submit" && asked?.input) return responseProblem(asked.input, resolution.response);
  if (
    action === "submit" &&
    request.type === "input" &&
    (typeof resolution.text !== "string" || resolution.text.trim() === "")
  ) {
    return refuse("invalid_answer", "/payload/resolution/text", "an answer to a question needs some text");
  }
  return undefined;
}

/** A question set is answered with a question response that fits it, as the runner checks it. */
function responseProblem(set: PRPQuestionSet, response: unknown): ApiResult<never> | undefined {
  const decoded = decodeValue(response, { kind: "question-response" });
  if (!decoded.ok)
    return refuse(
      "invalid_answer",
      `/payload/resolution/response${decoded.error.path}`,
      `answer the question set with a question response: ${decoded.error.message}`,
    );
  const mismatch = responseMismatch(set, decoded.value, "/payload/resolution/response");
  return mismatch ? refuse("invalid_answer", mismatch.path, mismatch.message) : undefined;
}
