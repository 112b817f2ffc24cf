import type { GatedEvent } from "../emit-gate.js";

/** Flush rules of wire.md §5.4 for P2 deltas: after 20–40 ms or 4–16 KiB, or before any other event. */
export const COALESCE_WINDOW_MS = 30;
export const COALESCE_MAX_BYTES = 16 * 1024;

interface Pending {
  event: GatedEvent;
  text: string;
  count: number;
}

/**
 * Merges consecutive `item.delta` events of one item into one event whose text is their texts
 * in order, before they reach the emit gate (P2 events may be coalesced; P0 and P1 never are).
 * Any other event, another item, the size bound or the time window flushes first, so order is
 * kept; the gate never turns an event away, so nothing merged is lost. A merged event says how
 * many deltas it carries in `coalescedDeltas`.
 */
export function deltaCoalescer(next: (event: GatedEvent) => void): { emit(event: GatedEvent): void; flush(): void } {
  let pending: Pending | null = null;
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!pending) return;
    const p = pending;
    pending = null;
    next(
      p.count === 1 ? p.event : { ...p.event, payload: { ...p.event.payload, text: p.text, coalescedDeltas: p.count } },
    );
  };
  const mergeable = (e: GatedEvent) =>
    e.eventType === "item.delta" &&
    typeof e.payload.text === "string" &&
    Object.keys(e.payload).every((k) => k === "text");
  return {
    emit(event) {
      if (!mergeable(event)) {
        flush();
        return next(event);
      }
      if (pending && (pending.event.itemId !== event.itemId || pending.event.turnId !== event.turnId)) flush();
      if (pending) {
        pending.text += event.payload.text as string;
        pending.count++;
      } else {
        pending = { event, text: event.payload.text as string, count: 1 };
        timer = setTimeout(flush, COALESCE_WINDOW_MS);
      }
      if (Buffer.byteLength(pending.text) >= COALESCE_MAX_BYTES) flush();
    },
    flush,
  };
}
