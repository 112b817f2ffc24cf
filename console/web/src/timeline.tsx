import { useLayoutEffect, useRef } from "preact/hooks";
import type { TimelineEvent } from "./api.js";
import { eventSummary } from "./event-summary.js";

interface Props {
  /** The rows to show: a window of the run, never all of a long one. */
  events: TimelineEvent[];
  /** How many events the run has. */
  total: number;
  /** The replay step to mark (and scroll to). */
  current: number;
}

/**
 * A replay's events around its step, in delivery order. A live run's events are the events tab
 * (events-tab.tsx), which reads and follows them by range.
 */
export function Timeline({ events, total, current }: Props) {
  const list = useRef<HTMLOListElement>(null);
  useLayoutEffect(() => {
    list.current?.querySelector(".current")?.scrollIntoView({ block: "nearest" });
  }, [events, current]);
  const first = events[0]?.position;
  const last = events.at(-1)?.position;
  return (
    <section aria-labelledby="timeline-title" class="timeline">
      <h2 id="timeline-title">Timeline ({total} events)</h2>
      <p class="window" data-testid="timeline-window">
        {first === undefined ? "No events shown yet." : `Showing events ${first}–${last} of ${total}.`}
      </p>
      <ol ref={list} tabIndex={0} aria-label="Events">
        {events.map((item) => (
          <li
            key={item.position}
            data-position={item.position}
            aria-current={item.position === current ? "step" : undefined}
            class={item.position === current ? "current" : undefined}
          >
            <span class="seq">{item.position}</span>
            <span class="type">{item.event.eventType}</span>
            <span class="summary">{eventSummary(item)}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
