import type { PrpEvent } from "../contract/index.js";
import { timelineSummary } from "../reducer/timeline-summary.js";

/** What a person reads for one event as a run goes: the timeline summary, and for runtime activity what was recorded. */
export function eventSummary(event: PrpEvent): string {
  if (event.eventType === "runtime.activity.recorded") {
    const payload = event.payload as { namespace?: unknown; activityKey?: unknown };
    return `activity ${String(payload.namespace)}: ${String(payload.activityKey)}`;
  }
  return timelineSummary(event, new Map());
}

/** One live line of `prp run`, `prp demo` and `prp fault`: sequence number, type, summary. */
export const liveEventLine = (event: PrpEvent): string => `  ${String(event.sourceSeq).padStart(3)}  ${event.eventType.padEnd(24)} ${eventSummary(event)}`;
