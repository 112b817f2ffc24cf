import { useLayoutEffect, useRef, useState } from "preact/hooks";
import type { TimelineEvent } from "./api.js";

/** How close to the end (px) still counts as "at the bottom": rounding and borders. */
const BOTTOM_SLACK = 8;

const summary = (item: TimelineEvent): string => {
  const p = item.event.payload as Record<string, unknown>;
  const request = p.request as { prompt?: string } | undefined;
  const text =
    typeof p.text === "string" ? p.text : typeof p.summary === "string" ? p.summary : (request?.prompt ?? "");
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
};

interface Props {
  /** The rows to show: a window of the run, never all of a long one. */
  events: TimelineEvent[];
  /** How many events the run has. */
  total: number;
  /** The replay step to mark (and scroll to). */
  current?: number;
  /** Live runs: follow the newest event while the reader is at the bottom; told when that changes. */
  onFollow?: (following: boolean) => void;
  onEarlier?: () => void;
  canShowEarlier?: boolean;
}

/** The run's events in delivery order; only a window of them is in the page. */
export function Timeline({ events, total, current, onFollow, onEarlier, canShowEarlier }: Props) {
  const list = useRef<HTMLOListElement>(null);
  const [following, setFollowing] = useState(true);
  const follow = (on: boolean) => {
    setFollowing(on);
    onFollow?.(on);
  };
  useLayoutEffect(() => {
    const el = list.current;
    if (!el) return;
    if (current !== undefined) el.querySelector(".current")?.scrollIntoView({ block: "nearest" });
    else if (onFollow && following) el.scrollTop = el.scrollHeight;
  }, [events, current, following]);
  const onScroll = () => {
    const el = list.current;
    if (!el || !onFollow) return;
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight <= BOTTOM_SLACK;
    if (atBottom !== following) follow(atBottom);
  };
  const first = events[0]?.position;
  const last = events.at(-1)?.position;
  return (
    <section aria-labelledby="timeline-title" class="timeline">
      <h2 id="timeline-title">Timeline ({total} events)</h2>
      <p class="window" data-testid="timeline-window">
        {first === undefined ? "No events shown yet." : `Showing events ${first}–${last} of ${total}.`}{" "}
        {onEarlier && (
          <button type="button" onClick={onEarlier} disabled={!canShowEarlier}>
            Show earlier events
          </button>
        )}
      </p>
      <ol ref={list} onScroll={onScroll} tabIndex={0} aria-label="Events">
        {events.map((item) => (
          <li
            key={item.position}
            data-position={item.position}
            aria-current={item.position === current ? "step" : undefined}
            class={item.position === current ? "current" : undefined}
          >
            <span class="seq">{item.position}</span>
            <span class="type">{item.event.eventType}</span>
            <span class="summary">{summary(item)}</span>
          </li>
        ))}
      </ol>
      {onFollow && (
        <p role="status" data-testid="follow-state">
          {following ? (
            "Following the newest events."
          ) : (
            <>
              Paused: you scrolled up.{" "}
              <button type="button" onClick={() => follow(true)}>
                Follow the newest
              </button>
            </>
          )}
        </p>
      )}
    </section>
  );
}
