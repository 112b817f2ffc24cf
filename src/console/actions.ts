import { isPlainObject } from "../contract/plain-object.js";
import type { PrpEvent } from "../contract/kinds.js";
import { reduceEvents } from "../reducer/reduce.js";
import { CONSOLE_COMMANDS, type ApiResult, type CommandReceipt } from "./api-types.js";
import type { RunBook } from "./run-book.js";

const refuse = (code: string, path: string, message: string): ApiResult<never> => ({ ok: false, error: { code, path, message } });

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
  if (!(CONSOLE_COMMANDS as readonly unknown[]).includes(type)) return refuse("command_not_allowed", "/type", `the console sends ${CONSOLE_COMMANDS.join(", ")}, not ${JSON.stringify(type)}`);
  if (!isPlainObject(payload)) return refuse("invalid_command", "/payload", "the payload must be a JSON object");
  if (!book.source.live) return book.source.queue(runId, type as string, payload);
  if (book.ended(runId)) return refuse("run_ended", "/runId", `run ${runId} has ended (run.terminal is committed): it takes no more commands`);
  if (type === "request.resolve") {
    const problem = await answerProblem(book, runId, payload);
    if (problem) return problem;
  }
  return book.source.queue(runId, type as string, payload);
}

async function answerProblem(book: RunBook, runId: string, payload: Record<string, unknown>): Promise<ApiResult<never> | undefined> {
  const events = book.eventsAfter(runId, 0);
  const { requestId, resolution } = payload;
  if (typeof requestId !== "string" || requestId === "") return refuse("invalid_answer", "/payload/requestId", "name the request: requestId is a non-empty string");
  const request = reduceEvents(null, null, events).requests.find((r) => r.requestId === requestId);
  if (!request) return refuse("unknown_request", "/payload/requestId", `the run has no request ${requestId}`);
  const queued = (await book.source.commands(runId)).some((c) => c.type === "request.resolve" && c.requestId === requestId);
  if (request.status !== "pending" || queued) return refuse("request_already_answered", "/payload/requestId", `request ${requestId} is already answered; an answer is sent once`);
  if (!isPlainObject(resolution) || typeof resolution.action !== "string" || !ACTIONS.has(resolution.action)) {
    return refuse("invalid_answer", "/payload/resolution/action", `resolution.action must be one of ${[...ACTIONS].join(", ")}`);
  }
  const choices = choiceKeys(events, requestId);
  if (resolution.action === "accept" && choices.length > 0 && !choices.includes(resolution.choice as string)) {
    return refuse("invalid_answer", "/payload/resolution/choice", `choose one of ${choices.join(", ")}`);
  }
  if (resolution.action === "submit" && request.type === "input" && (typeof resolution.text !== "string" || resolution.text.trim() === "")) {
    return refuse("invalid_answer", "/payload/resolution/text", "an answer to a question needs some text");
  }
  return undefined;
}

/** The keys of the request's choices, as the harness offered them. */
function choiceKeys(events: readonly PrpEvent[], requestId: string): string[] {
  for (const e of events) {
    const request = (e.payload as { request?: { requestId?: unknown; choices?: unknown } }).request;
    if (e.eventType === "runtime_request.created" && request?.requestId === requestId && Array.isArray(request.choices)) {
      return request.choices.map((c: { key?: unknown }) => String(c?.key));
    }
  }
  return [];
}
