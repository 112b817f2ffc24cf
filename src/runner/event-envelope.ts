import type { PrpEvent } from "../contract/kinds.js";
import { priorityOf } from "../contract/priority.js";

/** What differs between two events a runner emits; each runner mode picks its own ids and clock. */
export interface EventFacts {
  sourceSeq: number;
  sourceEventId: string;
  emittedAt: string;
  /** The runner instance: the source of every event it emits. */
  sourceInstanceId: string;
  runId: string;
  normalizedSessionId: string;
  eventType: string;
  payload: Record<string, unknown>;
  turnId?: string | undefined;
  itemId?: string | undefined;
}

/**
 * A runner's `paperclip.prp.event.v1` envelope: source kind `runner`, and the priority of the
 * event type (runtime.md §4.5). Not yet checked: callers encode it, which checks it.
 */
export function buildEvent(facts: EventFacts): PrpEvent {
  return {
    schema: "paperclip.prp.event.v1",
    sourceEventId: facts.sourceEventId,
    sourceSeq: facts.sourceSeq,
    sourceInstanceId: facts.sourceInstanceId,
    sourceKind: "runner",
    runId: facts.runId,
    normalizedSessionId: facts.normalizedSessionId,
    ...(facts.turnId ? { turnId: facts.turnId } : {}),
    ...(facts.itemId ? { itemId: facts.itemId } : {}),
    eventType: facts.eventType,
    schemaVersion: 1,
    priority: priorityOf(facts.eventType, facts.payload.code),
    emittedAt: facts.emittedAt,
    payload: facts.payload,
  } as PrpEvent;
}
