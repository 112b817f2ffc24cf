import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { TimelineEvent } from "./api.js";
import { EventRow, PendingRow } from "./event-row.js";
import { isFiltered, MAX_MATCHES, useEventCache, useEventMatches, type EventFilter } from "./events-data.js";
import { eventsNdjson, saveBlob } from "./events-download.js";
import { duration } from "./format.js";
import type { LiveRun } from "./use-live-run.js";
import { useNow } from "./use-now.js";
import { listHeight, rowTop, visibleRows, type WindowShape } from "./virtual-window.js";
import "./events.css";

/** A row's height (px); events.css draws it so. */
const ROW = 32;
/** How much taller the opened row is: its payload scrolls inside. */
const OPEN_EXTRA = 320;
/** Rows kept beyond each edge of the view. */
const OVERSCAN = 40;
/** How close to the end (px) still counts as "at the bottom": rounding and borders. */
const BOTTOM_SLACK = 8;
/** Filtered: read more matches while the reader is within this many rows of their end. */
const NEAR_END_ROWS = 20;
/** New events are announced to a screen reader at most this often, as one count. */
const ANNOUNCE_EVERY_MS = 5_000;
/** The filter is applied once typing pauses this long. */
const TYPING_MS = 300;

const NO_FILTER: EventFilter = { types: [], q: "" };
const plural = (n: number, what: string) => `${n.toLocaleString("en")} ${what}${n === 1 ? "" : "s"}`;

/**
 * A run's event history, as Temporal's event history and a CI's live log show one: every event
 * with its seq, type, time and time since the start, openable to its JSON; filtered by type and
 * text on the server; only the rows in view in the page (virtual-window.ts), read by range as the
 * reader scrolls, so a run of 100,000 events opens as fast as one of 100. At the bottom it follows
 * the newest events; scrolled up it counts them in a pill that jumps back.
 */
export function EventsTab({ live, focusSeq }: { live: LiveRun; focusSeq: number | null }) {
  const runId = live.view.run.runId;
  const latest = live.latest;
  const [filter, setFilter] = useState(NO_FILTER);
  const filtered = isFiltered(filter);
  const cache = useEventCache(runId);
  const matches = useEventMatches(runId, filter);
  const viewport = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  const [following, setFollowing] = useState(focusSeq === null);
  const [seenLatest, setSeenLatest] = useState(latest);
  const [openSeq, setOpenSeq] = useState<number | null>(null);
  const [note, setNote] = useState("");
  const focusPending = useRef<number | null>(null);

  useEffect(() => cache.put(live.rows, latest), [live.rows]);

  const count = filtered ? matches.events.length : latest;
  const seqAt = (i: number) => (filtered ? matches.events[i]!.position : i + 1);
  const indexOf = (seq: number) => (filtered ? matches.events.findIndex((e) => e.position === seq) : seq - 1);
  const shape: WindowShape = {
    count,
    rowHeight: ROW,
    openIndex: openSeq === null ? -1 : indexOf(openSeq),
    openExtra: OPEN_EXTRA,
    overscan: OVERSCAN,
  };
  const { first, end } = visibleRows(shape, view.top, view.height);

  // Read what the view needs: the range in view, or more matches near their end.
  useEffect(() => {
    if (!filtered) {
      if (end > first) cache.ensure(first + 1, end);
    } else if (end >= count - NEAR_END_ROWS) matches.more(latest);
  });

  // Following: the newest row stays in view as rows arrive.
  useLayoutEffect(() => {
    const el = viewport.current;
    if (el && following) el.scrollTop = el.scrollHeight;
    if (following && seenLatest !== latest) setSeenLatest(latest);
  }, [count, following, latest]);

  // A deep link: the rows around it, scrolled to its middle, marked and focused once read.
  useEffect(() => {
    if (focusSeq === null) return;
    if (filtered && indexOf(focusSeq) < 0)
      return setNote(`Event ${focusSeq} is not among the matches: clear the filter to see it.`);
    const el = viewport.current;
    if (!el) return;
    setFollowing(false);
    setSeenLatest(latest);
    el.scrollTop = Math.max(0, rowTop(shape, indexOf(focusSeq)) - el.clientHeight / 2 + ROW / 2);
    focusPending.current = focusSeq;
    onScroll();
  }, [focusSeq]);

  // A new filter shows its matches from the first (or, following, from the newest).
  useLayoutEffect(() => {
    const el = viewport.current;
    if (!el || following) return;
    el.scrollTop = 0;
    onScroll();
  }, [filter]);
  useLayoutEffect(() => {
    if (focusPending.current === null) return;
    const row = viewport.current?.querySelector<HTMLElement>(`[data-seq="${focusPending.current}"]`);
    if (!row) return;
    row.focus({ preventScroll: true });
    focusPending.current = null;
  });

  const onScroll = () => {
    const el = viewport.current;
    if (!el) return;
    setView({ top: el.scrollTop, height: el.clientHeight });
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight <= BOTTOM_SLACK;
    if (atBottom === following) return;
    setFollowing(atBottom);
    setSeenLatest(latest);
  };
  useLayoutEffect(onScroll, []);

  const onToggle = useCallback((seq: number) => setOpenSeq((open) => (open === seq ? null : seq)), []);
  const onCopy = useCallback((item: TimelineEvent) => {
    navigator.clipboard
      .writeText(JSON.stringify(item.event))
      .then(() => setNote(`Copied event ${item.position} as JSON.`))
      .catch((err: Error) => setNote(`Could not copy event ${item.position}: ${err.message}`));
  }, []);

  const startMs = Date.parse(live.view.run.startedAt ?? "");
  const rows = [];
  for (let i = first; i < end; i++) {
    const seq = seqAt(i);
    const item = filtered ? matches.events[i] : cache.get(seq);
    const top = rowTop(shape, i);
    rows.push(
      item ? (
        <EventRow
          key={seq}
          runId={runId}
          item={item}
          top={top}
          setSize={filtered ? count : latest}
          startMs={startMs}
          open={openSeq === seq}
          current={focusSeq === seq}
          onToggle={onToggle}
          onCopy={onCopy}
        />
      ) : (
        <PendingRow key={seq} seq={seq} top={top} />
      ),
    );
  }
  const fresh = following ? 0 : latest - seenLatest;
  const toNewest = () => {
    setFollowing(true);
    setSeenLatest(latest);
  };

  return (
    <section aria-labelledby="events-title" class="events-tab">
      <h2 id="events-title">Event history</h2>
      <EventsToolbar runId={runId} latest={latest} onFilter={setFilter} setNote={setNote} />
      <p class="events-count">
        {filtered
          ? `${plural(matches.events.length, "match")}, scanned ${matches.scannedTo.toLocaleString("en")} of ${plural(latest, "event")}${
              matches.events.length >= MAX_MATCHES ? ": the first matches only, narrow the filter" : ""
            }.`
          : `${plural(latest, "event")}.`}{" "}
        <LastEvent live={live} />
      </p>
      {(matches.error ?? cache.error) && (
        <p role="alert" class="refusal">
          {matches.error ?? cache.error}
        </p>
      )}
      <div class="events-frame">
        <div
          ref={viewport}
          class="events-viewport"
          data-testid="events-list"
          onScroll={onScroll}
          tabIndex={0}
          role="region"
          aria-label={`Events of ${runId}`}
        >
          <ol style={{ height: `${listHeight(shape)}px` }}>{rows}</ol>
        </div>
        {fresh > 0 && (
          <button type="button" class="new-events-pill" data-testid="new-events-pill" onClick={toNewest}>
            {plural(fresh, "new event")} ↓
          </button>
        )}
      </div>
      <p role="status" class="events-note">
        {note}
      </p>
      <Announcer latest={latest} />
    </section>
  );
}

/** The filter inputs (applied once typing pauses) and the download. */
function EventsToolbar({
  runId,
  latest,
  onFilter,
  setNote,
}: {
  runId: string;
  latest: number;
  onFilter: (f: EventFilter) => void;
  setNote: (text: string) => void;
}) {
  const [types, setTypes] = useState("");
  const [q, setQ] = useState("");
  const [downloading, setDownloading] = useState(false);
  useEffect(() => {
    const timer = setTimeout(() => {
      const list = types
        .split(",")
        .map((t) => t.trim())
        .filter((t) => t !== "");
      onFilter(list.length === 0 && q === "" ? NO_FILTER : { types: list, q });
    }, TYPING_MS);
    return () => clearTimeout(timer);
  }, [types, q]);
  const download = () => {
    setDownloading(true);
    eventsNdjson(runId, (done) =>
      setNote(`Downloading events: ${done.toLocaleString("en")} of ${latest.toLocaleString("en")}…`),
    )
      .then((blob) => {
        saveBlob(blob, `${runId}-events.ndjson`);
        setNote(`Downloaded the events (${blob.size.toLocaleString("en")} bytes).`);
      })
      .catch((err: Error) => setNote(`Could not download the events: ${err.message}`))
      .finally(() => setDownloading(false));
  };
  return (
    <form class="events-toolbar" role="search" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
      <label>
        Event type{" "}
        <input
          data-testid="event-filter-type"
          value={types}
          placeholder="item.delta, turn.completed"
          spellcheck={false}
          onInput={(e) => setTypes((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Search{" "}
        <input
          type="search"
          data-testid="event-search"
          value={q}
          onInput={(e) => setQ((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="button" data-testid="download-events" onClick={download} disabled={downloading}>
        {downloading ? "Downloading…" : "Download (NDJSON)"}
      </button>
    </form>
  );
}

/** "Last event 4 s ago", from the newest event's time; ticking while the run is live. */
function LastEvent({ live }: { live: LiveRun }) {
  const ended = live.view.session.terminal !== null && live.view.session.terminal !== undefined;
  const now = useNow(!ended);
  const newest = live.rows.at(-1)?.event.emittedAt;
  const { startedAt, durationMs } = live.view.run;
  const at = newest ? Date.parse(newest) : startedAt ? Date.parse(startedAt) + (durationMs ?? 0) : NaN;
  if (!Number.isFinite(at)) return null;
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  return <span class="last-event">Last event {seconds < 60 ? `${seconds} s` : duration(seconds * 1000)} ago.</span>;
}

/** A polite live region: the new events as one count at most every ANNOUNCE_EVERY_MS, never one by one. */
function Announcer({ latest }: { latest: number }) {
  const announced = useRef(latest);
  const newest = useRef(latest);
  newest.current = latest;
  const [text, setText] = useState("");
  useEffect(() => {
    const timer = setInterval(() => {
      const n = newest.current - announced.current;
      if (n <= 0) return;
      announced.current = newest.current;
      setText(`${plural(n, "new event")}.`);
    }, ANNOUNCE_EVERY_MS);
    return () => clearInterval(timer);
  }, []);
  return (
    <p class="visually-hidden" aria-live="polite" data-testid="live-announcer">
      {text}
    </p>
  );
}
