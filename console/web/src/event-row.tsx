import type { TimelineEvent } from "./api.js";
import { eventSummary } from "./event-summary.js";
import { clock, sinceStart } from "./format.js";
import { runHref } from "./route.js";

/** The most characters of an event's pretty JSON shown: the rest is in its copy and the download. */
const PAYLOAD_CHARS = 100_000;

/** An event as pretty JSON, bounded; JSON escapes control characters, so an ANSI escape reads as \u001b. */
export function payloadText(item: TimelineEvent): string {
  const text = JSON.stringify(item.event, null, 2);
  if (text.length <= PAYLOAD_CHARS) return text;
  return `${text.slice(0, PAYLOAD_CHARS)}\n… ${text.length - PAYLOAD_CHARS} more characters: copy the event or download the events for all of it.`;
}

interface RowProps {
  runId: string;
  item: TimelineEvent;
  /** Its place in the list, px from the top. */
  top: number;
  setSize: number;
  /** The run's first event's time (ms), for "+1.234 s". */
  startMs: number;
  open: boolean;
  current: boolean;
  onToggle: (seq: number) => void;
  onCopy: (item: TimelineEvent) => void;
}

/** One event: a button that opens its payload, a link to it, and a copy of its JSON. */
export function EventRow({ runId, item, top, setSize, startMs, open, current, onToggle, onCopy }: RowProps) {
  const seq = item.position;
  const at = item.event.emittedAt;
  return (
    <li
      data-seq={seq}
      style={{ top: `${top}px` }}
      class={`event-row${open ? " open" : ""}`}
      aria-current={current ? "true" : undefined}
      aria-posinset={seq}
      aria-setsize={setSize}
      tabIndex={-1}
    >
      <div class="event-line">
        <button
          type="button"
          class="event-toggle"
          aria-expanded={open}
          aria-controls={`event-payload-${seq}`}
          onClick={() => onToggle(seq)}
        >
          <span class="seq">{seq}</span>
          <span class="type">{item.event.eventType}</span>
          <time class="at" dateTime={at}>
            {clock(at)}
          </time>
          <span class="since">{sinceStart(Date.parse(at) - startMs)}</span>
          <span class="summary">{eventSummary(item)}</span>
        </button>
        <a class="event-link" href={runHref(runId, "events", seq)} aria-label={`Link to event ${seq}`}>
          #
        </a>
        <button type="button" data-testid="copy-event" onClick={() => onCopy(item)} aria-label={`Copy event ${seq}`}>
          Copy
        </button>
      </div>
      {open && (
        <pre id={`event-payload-${seq}`} class="event-payload" data-testid="event-payload" tabIndex={0}>
          {payloadText(item)}
        </pre>
      )}
    </li>
  );
}

/** A row whose event is being read. */
export function PendingRow({ seq, top }: { seq: number; top: number }) {
  return (
    <li class="event-row pending" data-pending-seq={seq} style={{ top: `${top}px` }} aria-busy="true">
      <span class="seq">{seq}</span> loading…
    </li>
  );
}
