import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { fetchEvents, runStreamUrl, type RunView, type TimelineEvent } from "./api.js";
import { openStream } from "./stream.js";

/** The rows the page shows while it follows the newest events: the DOM stays this small. */
export const WINDOW = 200;
/** The most rows it keeps at all, with earlier ones loaded ("show earlier") and the reader scrolled up. */
export const MAX_ROWS = 2000;

/**
 * A live run: the newest part of its timeline, streamed as events commit, and its latest view.
 * It starts WINDOW events before the end (a reload starts there again: nothing is stored in the
 * browser), resumes by position (`?after=`, and Last-Event-ID on the browser's own reconnects),
 * shows each event once, in order, and never appends one that does not follow the last (a gap).
 */
export function useLiveRun(runId: string, first: RunView) {
  const [rows, setRows] = useState<TimelineEvent[]>([]);
  const [view, setView] = useState<RunView>(first);
  const [streamError, setStreamError] = useState<string | null>(null);
  const held = useRef<TimelineEvent[]>([]);
  const following = useRef(true);
  const start = Math.max(0, first.run.eventCount - WINDOW);
  useEffect(() => {
    const source = openStream(runStreamUrl(runId, start));
    source.addEventListener("prp", (e) => {
      const item = JSON.parse((e as MessageEvent<string>).data) as TimelineEvent;
      const last = held.current.at(-1)?.position ?? start;
      if (item.position <= last) return;
      if (item.position !== last + 1)
        return setStreamError(`event ${last + 1} is missing from the stream; reload the page`);
      const kept = following.current ? WINDOW : MAX_ROWS;
      held.current = [...held.current.slice(Math.max(0, held.current.length + 1 - kept)), item];
      setRows(held.current);
    });
    source.addEventListener("view", (e) => {
      setStreamError(null);
      setView(JSON.parse((e as MessageEvent<string>).data) as RunView);
    });
    source.onerror = () =>
      setStreamError(
        source.refused === null
          ? "the live stream was interrupted; reconnecting…"
          : `the live stream was refused: ${source.refused}`,
      );
    return () => source.close();
  }, [runId, start]);
  /** Loads the WINDOW events before the first row shown. */
  const showEarlier = useCallback(async () => {
    const firstShown = held.current[0]?.position ?? start + 1;
    const after = Math.max(0, firstShown - 1 - WINDOW);
    const page = await fetchEvents(runId, after, firstShown - 1 - after);
    if (!page.ok) return setStreamError(`${page.error.code}: ${page.error.message}`);
    held.current = [...page.value.events.filter((e) => e.position < firstShown), ...held.current];
    setRows(held.current);
  }, [runId, start]);
  const setFollowing = useCallback((on: boolean) => {
    following.current = on;
  }, []);
  return {
    rows,
    view,
    streamError,
    showEarlier,
    canShowEarlier: (rows[0]?.position ?? start + 1) > 1 && rows.length < MAX_ROWS,
    setFollowing,
  };
}
