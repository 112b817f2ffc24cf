import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { fetchView, runEventsUrl, type RunView, type TimelineEvent } from "./api.js";
import { openStream } from "./stream.js";

/** The newest events the page keeps from the stream; older ones are read by range (events-tab.tsx). */
export const WINDOW = 200;
/** The run's view is fetched at most this often while its events arrive: as often as a person reads it. */
export const VIEW_EVERY_MS = 250;
/** And this often while the run is quiet (a command's status changes without an event). */
const QUIET_VIEW_EVERY_MS = 2000;

/** What a live run's page reads: its newest events, its latest view, and how to refresh it. */
export interface LiveRun {
  /** The newest events streamed (at most WINDOW), in order. */
  rows: TimelineEvent[];
  /** The seq of the newest event known: the stream's last, or the view's count before it. */
  latest: number;
  view: RunView;
  streamError: string | null;
  refresh: () => void;
}

/**
 * A live run: the newest part of its events, followed as events commit (the API's event
 * stream), and its latest view (the API's run, fetched). It starts WINDOW events before the end
 * (a reload starts there again: nothing is stored in the browser), resumes by seq (`?after=`,
 * then Last-Event-ID on reconnects), shows each event once, in order, and never appends one that
 * does not follow the last (a gap). The view is fetched at most every VIEW_EVERY_MS while events
 * arrive, and once more after the stream's end.
 */
export function useLiveRun(runId: string, first: RunView): LiveRun {
  const [rows, setRows] = useState<TimelineEvent[]>([]);
  const [view, setView] = useState<RunView>(first);
  const [streamError, setStreamError] = useState<string | null>(null);
  const held = useRef<TimelineEvent[]>([]);
  const refreshView = useRef<() => void>(() => {});
  const start = Math.max(0, first.run.eventCount - WINDOW);
  useEffect(() => {
    let closed = false;
    let fetching = false;
    let again = false;
    let lastFetch = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const fetchNow = async () => {
      timer = undefined;
      if (fetching) return void (again = true);
      fetching = true;
      lastFetch = Date.now();
      const next = await fetchView(runId);
      fetching = false;
      if (closed) return;
      if (next.ok) setView(next.value);
      if (again) {
        again = false;
        schedule();
      }
    };
    /** The view, at most every VIEW_EVERY_MS: a burst of events costs one fetch per interval. */
    const schedule = () => {
      if (closed || timer !== undefined) return;
      timer = setTimeout(() => void fetchNow(), Math.max(0, lastFetch + VIEW_EVERY_MS - Date.now()));
    };
    refreshView.current = schedule;
    const quiet = setInterval(() => {
      if (Date.now() - lastFetch >= QUIET_VIEW_EVERY_MS) schedule();
    }, QUIET_VIEW_EVERY_MS);
    const source = openStream(runEventsUrl(runId, start));
    source.addEventListener("prp", (e) => {
      const position = Number(e.lastEventId);
      const last = held.current.at(-1)?.position ?? start;
      if (position <= last) return;
      if (position !== last + 1) return setStreamError(`event ${last + 1} is missing from the stream; reload the page`);
      setStreamError(null);
      const item: TimelineEvent = { position, event: JSON.parse(e.data) as TimelineEvent["event"] };
      held.current = [...held.current.slice(Math.max(0, held.current.length + 1 - WINDOW)), item];
      setRows(held.current);
      schedule();
    });
    // After run.terminal: nothing follows. The view once more, and no reconnect.
    source.addEventListener("end", () => {
      source.close();
      clearInterval(quiet);
      schedule();
    });
    source.onerror = () =>
      setStreamError(
        source.refused === null
          ? "the live stream was interrupted; reconnecting…"
          : `the live stream was refused: ${source.refused}`,
      );
    return () => {
      closed = true;
      clearTimeout(timer);
      clearInterval(quiet);
      source.close();
    };
  }, [runId, start]);
  return {
    rows,
    view,
    streamError,
    latest: Math.max(view.run.eventCount, rows.at(-1)?.position ?? 0),
    /** Fetches the view soon (a command was sent: its receipt is in the next one). */
    refresh: useCallback(() => refreshView.current(), []),
  };
}
