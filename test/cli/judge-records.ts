import assert from "node:assert/strict";
import type { DurableRunFacts } from "../../src/fault/durable-run.js";
import type { FaultVerdict } from "../../src/fault/fault-judge.js";
import { harnessItemId } from "../../src/fault/script-delivery.js";
import type { PrpEvent } from "../../src/contract/kinds.js";

/** A verdict's failed checks and their reasons, by check: `{}` when it passed. */
export const failing = (v: FaultVerdict): Record<string, string[]> =>
  Object.fromEntries(v.checks.filter((c) => !c.passed).map((c) => [c.check, c.reasons]));

/** The record as a runner that emitted exactly `events` would have left it: seqs and ids 1..N, the cursor at N. */
export function renumbered(facts: DurableRunFacts, events: PrpEvent[]): DurableRunFacts {
  const runner = facts.events[0]!.sourceInstanceId;
  const out = events.map((e, i) => ({
    ...e,
    sourceSeq: i + 1,
    sourceEventId: `event_${runner}_${String(i + 1).padStart(16, "0")}`,
  }));
  return { ...facts, events: out, run: facts.run ? { ...facts.run, ackedSourceSeq: out.length } : undefined };
}

/** Where the first event of `type` (and of the harness's item `itemId`, when given) sits in `events`; the test fails if none does. */
export function indexOf(events: PrpEvent[], type: string, itemId?: string): number {
  const i = events.findIndex((e) => e.eventType === type && (itemId === undefined || harnessItemId(e) === itemId));
  assert.ok(i >= 0, `the record has ${type}${itemId ? ` ${itemId}` : ""}`);
  return i;
}
