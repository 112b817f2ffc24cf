import type { PrpEvent } from "../contract/kinds.js";
import { timelineSummary } from "../reducer/timeline-summary.js";
import { visible } from "./terminal-text.js";

/**
 * What a person reads about an event as a run goes: its timeline summary, except where the
 * timeline summary (fixed by the goldens) says only the event's name: a credential update
 * says which binding moved to which revision (its payload holds nothing secret), a runtime
 * activity what was recorded. The agent writes most of it: every control character is shown
 * visibly (terminal-text.ts).
 */
export function eventSummary(event: PrpEvent): string {
  return visible(summary(event));
}

function summary(event: PrpEvent): string {
  if (event.eventType === "auth.credentials.updated") {
    const p = event.payload as { provider?: unknown; bindingId?: unknown; revision?: unknown; detection?: unknown };
    return `Credentials updated: ${String(p.provider)}/${String(p.bindingId)} revision ${String(p.revision)} (${String(p.detection)})`;
  }
  if (event.eventType === "runtime.activity.recorded") {
    const p = event.payload as { namespace?: unknown; activityKey?: unknown };
    return `activity ${String(p.namespace)}: ${String(p.activityKey)}`;
  }
  return timelineSummary(event, new Map());
}

/** One live line of `prp run`, `prp demo` and `prp fault`: sequence number, type, summary. */
export const eventLine = (event: PrpEvent): string =>
  `  ${String(event.sourceSeq).padStart(3)}  ${visible(event.eventType).padEnd(24)} ${eventSummary(event)}`;

/** One line of `prp events` (and `prp submit --wait`): the committed seq, type, summary. */
export const eventRow = (seq: number, event: PrpEvent): string =>
  `${String(seq).padStart(4)}  ${visible(event.eventType).padEnd(28)} ${eventSummary(event)}`;
