import { isDeepStrictEqual } from "node:util";
import type { PrpEvent } from "../contract/kinds.js";

export interface HostRecord {
  /** Each event once, in the order the host first received it. */
  events: PrpEvent[];
  /**
   * Callbacks for an event the host had already received, with the same content: the ingest
   * contract allows them (a crash between the callback and the cursor redelivers), and a host
   * dedupes them by sourceEventId, so they are counted, not failed.
   */
  repeatedCallbacks: number;
  reasons: string[];
}

/**
 * Reads what a host's `onCommittedEvent` received, every invocation in order: sourceSeq must
 * run 1..N with no gap and no reordering, each sourceSeq must have one sourceEventId, a
 * sourceEventId that comes again must come with the same content, and the authority's cursor
 * must stand at the last sourceSeq the host received.
 */
export function readHostRecord(received: PrpEvent[], cursor: number | undefined): HostRecord {
  const byId = new Map<string, PrpEvent>();
  const idBySeq = new Map<number, string>();
  const events: PrpEvent[] = [];
  const reasons: string[] = [];
  let repeatedCallbacks = 0;
  for (const event of received) {
    const first = byId.get(event.sourceEventId);
    if (first) {
      if (isDeepStrictEqual(first, event)) repeatedCallbacks++;
      else
        reasons.push(
          `conflict: ${event.sourceEventId} reached the host again with other content (sourceSeq ${first.sourceSeq}, then ${event.sourceSeq})`,
        );
      continue;
    }
    const sameSeq = idBySeq.get(event.sourceSeq);
    if (sameSeq) {
      reasons.push(`duplicate sourceSeq ${event.sourceSeq}: ${sameSeq} and ${event.sourceEventId}`);
      continue;
    }
    const want = (events.at(-1)?.sourceSeq ?? 0) + 1;
    if (event.sourceSeq > want)
      reasons.push(
        event.sourceSeq === want + 1 ? `gap at sourceSeq ${want}` : `gap at sourceSeq ${want}-${event.sourceSeq - 1}`,
      );
    if (event.sourceSeq < want) reasons.push(`out of order: sourceSeq ${event.sourceSeq} after ${want - 1}`);
    byId.set(event.sourceEventId, event);
    idBySeq.set(event.sourceSeq, event.sourceEventId);
    events.push(event);
  }
  const last = events.reduce((n, e) => Math.max(n, e.sourceSeq), 0);
  if (cursor !== undefined && cursor !== last)
    reasons.push(`the authority's cursor is at sourceSeq ${cursor}, the host received up to ${last}`);
  return { events, repeatedCallbacks, reasons };
}
