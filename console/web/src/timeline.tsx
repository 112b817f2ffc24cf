import type { TimelineEvent } from "./api.js";

const summary = (item: TimelineEvent): string => {
  const p = item.event.payload as Record<string, unknown>;
  const request = p.request as { prompt?: string } | undefined;
  const text = typeof p.text === "string" ? p.text : typeof p.summary === "string" ? p.summary : (request?.prompt ?? "");
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
};

/** The run's events in delivery order; `current` marks the replay step. */
export function Timeline({ events, current }: { events: TimelineEvent[]; current?: number }) {
  return (
    <section aria-labelledby="timeline-title" class="timeline">
      <h2 id="timeline-title">Timeline ({events.length} events)</h2>
      <ol>
        {events.map((item) => (
          <li key={item.position} data-position={item.position} aria-current={item.position === current ? "step" : undefined} class={item.position === current ? "current" : undefined}>
            <span class="seq">{item.position}</span>
            <span class="type">{item.event.eventType}</span>
            <span class="summary">{summary(item)}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
