import type { PrpEvent } from "../contract/index.js";
import { lastSegment, nonEmpty, record, text } from "./payload.js";
import { requestIdOf, sessionRequest } from "./requests.js";
import type { SessionRequest } from "./snapshot.js";

const spaced = (value: string): string => value.replaceAll("_", " ");
const sentenceCase = (value: string): string => value.charAt(0).toUpperCase() + value.slice(1);

const DIAGNOSTICS = new Set(["runner.diagnostic", "harness.diagnostic", "runner.backpressure"]);
const REQUEST_UPDATES = new Set(["runtime_request.resolved", "runtime_request.expired", "runtime_request.cancelled"]);

const requestText = (request: SessionRequest): string =>
  request.prompt.length > 0 ? `${request.type}: ${request.prompt}` : `${request.type} request`;

const goalCapabilityText = (goals: Record<string, unknown>): string => {
  const actions = Array.isArray(goals.actions) ? goals.actions.filter((a): a is string => typeof a === "string") : [];
  return `Session goals ${spaced(nonEmpty(goals.availability, "unsupported"))}${actions.length > 0 ? `: ${actions.join(", ")}` : ""}`;
};

const goalText = (label: string, value: unknown): string => {
  if (value === null || typeof value !== "object") return `${label}: none`;
  const goal = record(value);
  const budget = typeof goal.tokenBudget === "number" ? `, budget ${goal.tokenBudget} tokens` : "";
  return `${label}: ${nonEmpty(goal.status, "unknown")}${goal.workingNow === true ? ", working now" : ""}${budget}: ${text(goal.objective)}`;
};

/**
 * The one-line, human summary of an applied event (wire.md §15.2 table). Types without a rule of
 * their own read as their name with dots as spaces ("turn interrupted"). `requests` is the state
 * before this event, so that a resolution can quote the prompt it answers.
 */
export function timelineSummary(event: PrpEvent, requests: ReadonlyMap<string, SessionRequest>): string {
  const payload = record(event.payload);
  const type = event.eventType;
  switch (type) {
    case "runtime.phase.changed":
      return `Phase changed to ${spaced(nonEmpty(payload.phase, "unknown"))}`;
    case "item.started":
      return `Started ${nonEmpty(payload.kind, "item")}`;
    case "item.completed":
      return `Completed ${nonEmpty(payload.kind, "item")}`;
    case "item.delta":
      return text(payload.text, "Item updated");
    case "item.failed":
      return nonEmpty(payload.message, "Item failed");
    case "run.result.proposed":
      return nonEmpty(payload.summary, "Structured result proposed");
    case "run.terminal":
      return `Run ${nonEmpty(payload.runTerminalState, "terminal")}`;
    case "session.capabilities.updated":
      return goalCapabilityText(record(payload.sessionGoals));
    case "session.goal.snapshot":
    case "session.goal.updated":
      return goalText(type === "session.goal.updated" ? "Goal updated" : "Goal", payload.goal);
    case "session.goal.cleared":
      return "Goal cleared";
    case "runtime_request.created": {
      const request = sessionRequest(payload);
      if (request) return requestText(request);
    }
  }
  if (DIAGNOSTICS.has(type)) {
    const message = text(payload.message);
    if (message.length > 0) return message;
    const code = text(payload.code);
    if (code.length > 0) return sentenceCase(spaced(code));
  }
  if (REQUEST_UPDATES.has(type)) {
    const requestId = requestIdOf(payload);
    const action = sentenceCase(lastSegment(type));
    const request = requests.get(requestId);
    return request ? `${action} ${requestText(request)}` : `${action} runtime request ${requestId}`.trimEnd();
  }
  return type.replaceAll(".", " ");
}
