import type { PRPRunTerminal, PRPStructuredRunResult, PrpEvent } from "../contract/index.js";
import { lastSegment, nonEmpty, text, type Json } from "./payload.js";
import { requestIdOf, sessionRequest } from "./requests.js";
import type { SessionItem, TurnState } from "./snapshot.js";
import type { ReducerState } from "./state.js";

const TURN_ENDS: ReadonlyMap<string, TurnState> = new Map([
  ["turn.completed", "completed"],
  ["turn.failed", "failed"],
  ["turn.interrupted", "interrupted"],
  ["turn.cancelled", "cancelled"],
]);

const ITEM_STATUS: ReadonlyMap<string, SessionItem["status"]> = new Map([
  ["item.started", "running"],
  ["item.delta", "running"],
  ["item.completed", "completed"],
  ["item.failed", "failed"],
]);

/**
 * The v1 projection of one applied event (runtime.md §3.2 step 5). Session and turn state come
 * only from session and turn events: the terminal payload is copied, never interpreted.
 * Returns false for a type it does not project.
 */
export function projectV1(state: ReducerState, event: PrpEvent, payload: Json): boolean {
  const type = event.eventType;
  switch (type) {
    case "runtime.phase.changed":
      state.runPhase = nonEmpty(payload.phase, state.runPhase);
      return true;
    case "session.started":
    case "session.resumed":
      state.sessionState = "running";
      return true;
    case "session.closed":
      state.sessionState = "closed";
      return true;
    case "session.failed":
      state.sessionState = "failed";
      return true;
    case "turn.started":
      state.turnState = "running";
      state.activeTurnId = event.turnId ?? null;
      return true;
    case "runtime_request.created": {
      const request = sessionRequest(payload);
      if (request && !state.requests.has(request.requestId)) state.requests.set(request.requestId, request);
      return true;
    }
    case "runtime_request.resolved":
    case "runtime_request.expired":
    case "runtime_request.cancelled": {
      const request = state.requests.get(requestIdOf(payload));
      if (request) request.status = lastSegment(type);
      return true;
    }
    case "run.result.proposed":
      state.proposedResult = structuredClone(payload) as PRPStructuredRunResult;
      return true;
    case "run.terminal":
      state.terminal = structuredClone(payload) as PRPRunTerminal;
      state.runPhase = "terminal";
      return true;
  }
  const turnEnd = TURN_ENDS.get(type);
  if (turnEnd) {
    state.turnState = turnEnd;
    state.activeTurnId = null;
    return true;
  }
  const itemStatus = ITEM_STATUS.get(type);
  if (itemStatus) {
    // A durable runner gives every item of a run the run's one envelope itemId and names the
    // harness's own item in providerItemId: keyed by itemId alone, a run's items would merge.
    const key = providerItemId(event) ?? event.itemId;
    if (key !== undefined) upsertItem(state.items, key, type, itemStatus, payload);
    return true;
  }
  return false;
}

const providerItemId = (event: object): string | undefined => {
  const id = (event as { providerItemId?: unknown }).providerItemId;
  return typeof id === "string" && id !== "" ? id : undefined;
};

/** A delta appends its text; any other item event replaces the text only with a non-empty one. */
function upsertItem(
  items: Map<string, SessionItem>,
  itemId: string,
  type: string,
  status: SessionItem["status"],
  payload: Json,
): void {
  const incoming = text(payload.text);
  const item = items.get(itemId);
  if (!item) {
    items.set(itemId, { itemId, kind: nonEmpty(payload.kind, "diagnostic"), status, text: incoming });
    return;
  }
  item.kind = nonEmpty(payload.kind, item.kind);
  item.status = status;
  if (type === "item.delta") item.text += incoming;
  else if (incoming.length > 0) item.text = incoming;
}
