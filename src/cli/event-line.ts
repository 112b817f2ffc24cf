import type { PrpEvent } from "../contract/kinds.js";
import { timelineSummary } from "../reducer/timeline-summary.js";

/**
 * What a person reads about an event as it happens: its timeline summary, except for a
 * credential update, which says which binding moved to which revision (its payload holds
 * nothing secret to show, and the timeline summary, fixed by the goldens, says only its name).
 */
export function eventSummary(event: PrpEvent): string {
  if (event.eventType !== "auth.credentials.updated") return timelineSummary(event, new Map());
  const p = event.payload as { provider?: unknown; bindingId?: unknown; revision?: unknown; detection?: unknown };
  return `Credentials updated: ${String(p.provider)}/${String(p.bindingId)} revision ${String(p.revision)} (${String(p.detection)})`;
}

/** One live line: the event's sequence number, its type and its summary. */
export const eventLine = (event: PrpEvent): string => `  ${String(event.sourceSeq).padStart(3)}  ${event.eventType.padEnd(24)} ${eventSummary(event)}`;
