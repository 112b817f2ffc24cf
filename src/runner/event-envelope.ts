import { admit } from "../contract/admission.js";
import { ContractViolation, type ContractError } from "../contract/errors.js";
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
  /**
   * The harness's own item id where `itemId` must be the run's (durable mode). It goes on the
   * envelope, which is open, never into the payload: many payloads are closed.
   */
  providerItemId?: string | undefined;
  /** The envelope's version (wire.md O1): 1 unless the type needs a later one. */
  schemaVersion?: number | undefined;
}

/**
 * A runner's `paperclip.prp.event.vN` envelope (v1 unless `schemaVersion` says otherwise):
 * source kind `runner`, and the priority of the event type (runtime.md §4.5). Not yet
 * checked: callers encode it, which checks it.
 */
export function buildEvent(facts: EventFacts): PrpEvent {
  const version = facts.schemaVersion ?? 1;
  return {
    schema: `paperclip.prp.event.v${version}`,
    sourceEventId: facts.sourceEventId,
    sourceSeq: facts.sourceSeq,
    sourceInstanceId: facts.sourceInstanceId,
    sourceKind: "runner",
    runId: facts.runId,
    normalizedSessionId: facts.normalizedSessionId,
    ...(facts.turnId ? { turnId: facts.turnId } : {}),
    ...(facts.itemId ? { itemId: facts.itemId } : {}),
    ...(facts.providerItemId ? { providerItemId: facts.providerItemId } : {}),
    eventType: facts.eventType,
    schemaVersion: version,
    priority: priorityOf(facts.eventType, facts.payload.code),
    emittedAt: facts.emittedAt,
    payload: facts.payload,
  } as PrpEvent;
}

/**
 * The line a runner sends for an event it built, once the shared admission rule took it
 * (src/contract/admission.ts, the rule the authority's ingest applies). An event the contract
 * refuses throws ContractViolation (the emit gate decides who is at fault); one without a
 * canonical JSON form (a lone surrogate, more than 10,000 values) is returned as a refusal: no
 * authority could store it, so it can never be carried.
 */
export function admittedLine(event: PrpEvent): { line: string } | { noCanonicalForm: ContractError } {
  const admitted = admit("event", event);
  if (admitted.ok) return { line: JSON.stringify(event) };
  if (admitted.refusedBy === "contract") throw new ContractViolation(admitted.error);
  return { noCanonicalForm: admitted.error };
}
