import type { LoggedEvent } from "../authority/store.js";

/** Events one filtered page reads at most: a sparse filter over a long run pages on, never scans it all at once. */
export const MAX_EVENT_SCAN = 10_000;
/** The store is read this many events at a time while a filter scans. */
const SCAN_PAGE = 1000;

/** Which events a page keeps (GET /v1/runs/{runId}/events `type=` and `q=`). */
export interface EventFilter {
  /** Event types, any of them; empty for all. */
  types: ReadonlySet<string>;
  /** Lowercased text the envelope JSON must contain; empty for any. */
  text: string;
}

/** The filter of a query: `type` repeated or comma separated; `q` matched without case. */
export function eventFilter(type: string[] | undefined, q: string | undefined): EventFilter | null {
  const types = new Set(
    (type ?? [])
      .flatMap((t) => t.split(","))
      .map((t) => t.trim())
      .filter((t) => t !== ""),
  );
  const text = (q ?? "").toLowerCase();
  return types.size === 0 && text === "" ? null : { types, text };
}

export const matches = (filter: EventFilter, eventType: string, envelope: string): boolean =>
  (filter.types.size === 0 || filter.types.has(eventType)) &&
  (filter.text === "" || envelope.toLowerCase().includes(filter.text));

/**
 * Up to `limit` matching events after `after`, reading at most MAX_EVENT_SCAN events. `next` is
 * where the next page starts: the last match when the page is full (nothing after it skipped),
 * else the last event read.
 */
export async function scanEvents(
  eventLog: (after: number, limit: number) => Promise<LoggedEvent[]>,
  filter: EventFilter,
  after: number,
  limit: number,
): Promise<{ rows: LoggedEvent[]; next: number }> {
  const rows: LoggedEvent[] = [];
  let next = after;
  for (let scanned = 0; scanned < MAX_EVENT_SCAN;) {
    const page = await eventLog(next, Math.min(SCAN_PAGE, MAX_EVENT_SCAN - scanned));
    for (const row of page) {
      next = row.sourceSeq;
      if (!matches(filter, row.eventType, row.envelope)) continue;
      rows.push(row);
      if (rows.length === limit) return { rows, next };
    }
    if (page.length < SCAN_PAGE) break;
    scanned += page.length;
  }
  return { rows, next };
}
