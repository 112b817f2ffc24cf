import type { TimelineEvent } from "./api.js";
import { oneLine } from "./format.js";

/** How much of an event's text its one-line summary shows. */
const SUMMARY_CHARS = 160;

/** An event in one line of text: its text, summary, prompt or message, else its payload's JSON; bounded. */
export function eventSummary(item: TimelineEvent): string {
  const p = (item.event.payload ?? {}) as Record<string, unknown>;
  const request = p.request as { prompt?: unknown } | undefined;
  const text = [p.text, p.summary, request?.prompt, p.message].find((t): t is string => typeof t === "string");
  // The payload's JSON cut before it is made one line: a 1 MB payload costs one stringify, not more.
  return oneLine(text ?? JSON.stringify(p).slice(0, SUMMARY_CHARS + 1), SUMMARY_CHARS);
}
