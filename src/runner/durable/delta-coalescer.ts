import type { EventSink } from "../event-sink.js";

/** Flush rules of wire.md §5.4 for P2 deltas: after 20–40 ms or 4–16 KiB, or before any other event. */
export const COALESCE_WINDOW_MS = 30;
export const COALESCE_MAX_BYTES = 16 * 1024;

interface Pending {
  payload: Record<string, unknown>;
  text: string;
  ids: { turnId?: string; itemId?: string };
  count: number;
}

/**
 * Merges consecutive `item.delta` events of one item into one event whose text is their texts
 * in order, before they reach the outbox (P2 events may be coalesced; P0 and P1 never are).
 * Any other event, another item, the size bound or the time window flushes first, so order is
 * kept and nothing is dropped. A merged event says how many deltas it carries in
 * `coalescedDeltas`.
 */
export function coalescingSink(inner: EventSink): EventSink & { flush(): void } {
  let pending: Pending | null = null;
  let timer: NodeJS.Timeout | null = null;
  let flowing = true;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!pending) return;
    const p = pending;
    pending = null;
    const payload = p.count === 1 ? p.payload : { ...p.payload, text: p.text, coalescedDeltas: p.count };
    flowing = inner.emit("item.delta", payload, p.ids);
  };
  const mergeable = (payload: Record<string, unknown>) => typeof payload.text === "string" && Object.keys(payload).every((k) => k === "text");
  return {
    emit(eventType, payload, ids) {
      if (eventType !== "item.delta" || !mergeable(payload)) {
        flush();
        return inner.emit(eventType, payload, ids);
      }
      if (pending && (pending.ids.itemId !== ids.itemId || pending.ids.turnId !== ids.turnId)) flush();
      if (pending) {
        pending.text += payload.text as string;
        pending.count++;
      } else {
        pending = { payload, text: payload.text as string, ids, count: 1 };
        timer = setTimeout(flush, COALESCE_WINDOW_MS);
      }
      if (Buffer.byteLength(pending.text) >= COALESCE_MAX_BYTES) flush();
      return flowing;
    },
    onDrain: (resume) => inner.onDrain(resume),
    flush,
  };
}
