import type { PrpEvent } from "../contract/index.js";
import { record } from "./payload.js";
import { projectBeyondV1 } from "./project-beyond-v1.js";
import { projectV1 } from "./project-v1.js";
import { MAX_LISTED_MISSING_SEQS, type SequenceGap, type SessionSnapshot } from "./snapshot.js";
import { freeze, thaw, type ReducerState } from "./state.js";
import { timelineSummary } from "./timeline-summary.js";

/** Cursors are keyed by source (wire.md §5.3), e.g. `runner:runner_replay`. */
export const sourceKey = (event: Pick<PrpEvent, "sourceKind" | "sourceInstanceId">): string =>
  `${event.sourceKind}:${event.sourceInstanceId}`;

function gap(key: string, expected: number, received: number): SequenceGap {
  const listed = Math.min(received - expected, MAX_LISTED_MISSING_SEQS);
  return { sourceKey: key, expected, received, missing: Array.from({ length: listed }, (_, i) => expected + i) };
}

/**
 * One event through the per-event algorithm of runtime.md §3.2. Returns whether the state
 * changed. A gap is recorded when the cursor jumps; the cursor then moves past it, so the same
 * gap cannot be recorded twice.
 */
function step(state: ReducerState, event: PrpEvent): boolean {
  const id = event.sourceEventId;
  if (state.processed.has(id)) return false;
  const key = sourceKey(event);
  const cursor = state.cursors.get(key) ?? 0;
  if (event.sourceSeq <= cursor) {
    if (state.outOfOrder.has(id)) return false;
    state.outOfOrder.add(id); // recorded, never applied
    return true;
  }
  if (event.sourceSeq > cursor + 1) state.gaps.push(gap(key, cursor + 1, event.sourceSeq));
  state.cursors.set(key, event.sourceSeq);
  state.processed.add(id);
  const position = state.timeline.length + 1;
  const { sourceSeq, eventType, emittedAt, itemId } = event;
  const summary = timelineSummary(event, state.requests);
  // Two literals, not a spread of an optional key: one entry per event, so no object to throw away.
  state.timeline.push(
    itemId === undefined
      ? { position, sourceEventId: id, sourceSeq, eventType, emittedAt, summary }
      : { position, sourceEventId: id, sourceSeq, eventType, emittedAt, itemId, summary },
  );
  const payload = record(event.payload);
  if (!projectV1(state, event, payload)) projectBeyondV1(state.beyond, event, payload);
  return true;
}

/**
 * A batch applied in parts, with one copy of its input snapshot: `thaw` once, then each part's
 * events mutate this private state, and `close` freezes it once. Feeding the parts P1…Pn gives
 * exactly `applyEvents(snapshot, [...P1, …, ...Pn])`, whatever the parts' sizes: the batch's
 * duplicates are counted over all of them. A long run is folded a page at a time this way
 * without copying its growing timeline once per page.
 */
export class SessionDraft {
  private readonly state: ReducerState;
  private readonly inBatch = new Set<string>();
  private changed = false;
  private closed = false;

  constructor(private readonly snapshot: SessionSnapshot) {
    this.state = thaw(snapshot);
  }

  /** The batch's next events, in delivery order. */
  apply(events: Iterable<PrpEvent>): void {
    if (this.closed) throw new Error("SessionDraft.apply after close: the snapshot has been handed out");
    const state = this.state;
    for (const event of events) {
      const id = event.sourceEventId;
      if (!this.inBatch.has(id)) this.inBatch.add(id);
      else if (!state.duplicates.has(id)) {
        state.duplicates.add(id);
        this.changed = true;
      }
      if (step(state, event)) this.changed = true;
    }
  }

  /** The snapshot after the batch: the input itself when nothing changed. Ends the draft. */
  close(): SessionSnapshot {
    if (this.closed) throw new Error("SessionDraft.close twice: the snapshot has been handed out");
    this.closed = true;
    return this.changed ? freeze(this.state) : this.snapshot;
  }
}

/**
 * Applies a batch of events in delivery order. An id delivered more than once within the batch
 * is listed in `duplicateEventIds` (noting repeats as they come gives the same set as counting
 * the batch first, runtime.md §3.3); only its first copy can have an effect. Linear in the batch
 * plus one copy of the input snapshot. Returns the input snapshot itself when nothing changed,
 * so re-applying an applied batch is a no-op. Never mutates its inputs.
 */
export function applyEvents(snapshot: SessionSnapshot, events: Iterable<PrpEvent>): SessionSnapshot {
  const draft = new SessionDraft(snapshot);
  draft.apply(events);
  return draft.close();
}

/**
 * Applies one event: the same snapshot back when it changes nothing (its id was already
 * processed, or already recorded out of order), otherwise a new snapshot. Costs a copy of the
 * snapshot, so reduce a stream with `applyEvents` (or a `SessionDraft`), not event by event.
 */
export const applyEvent = (snapshot: SessionSnapshot, event: PrpEvent): SessionSnapshot =>
  applyEvents(snapshot, [event]);
