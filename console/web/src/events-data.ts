import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { fetchEventPage, type TimelineEvent } from "./api.js";

/** The most events one range request asks for (the API's page bound). */
const RANGE_LIMIT = 1000;
/** The most events kept in the page at once: those farthest from the view go first. */
const MAX_CACHED = 4000;
/** Matches read per filtered request (each a bounded scan on the server). */
const MATCH_PAGE = 200;
/** The most matches kept: past it the person narrows the filter. */
export const MAX_MATCHES = 5000;

/**
 * The run's events by seq, read by range as the reader scrolls (`ensure`) and fed the newest ones
 * from the stream (`put`); at most MAX_CACHED kept. One request at a time: after it lands the
 * page renders again and asks for what is still missing, so a fast scroll through 100,000 events
 * costs a request per stop, not per row passed.
 */
export function useEventCache(runId: string) {
  const cache = useRef(new Map<number, TimelineEvent>());
  const loading = useRef(false);
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<string | null>(null);

  const put = useCallback((events: readonly TimelineEvent[], center: number) => {
    const map = cache.current;
    let added = false;
    for (const e of events)
      if (!map.has(e.position)) {
        map.set(e.position, e);
        added = true;
      }
    if (map.size > MAX_CACHED) {
      const far = [...map.keys()].sort((a, b) => Math.abs(b - center) - Math.abs(a - center));
      for (const seq of far.slice(0, map.size - (MAX_CACHED * 3) / 4)) map.delete(seq);
    }
    if (added) setVersion((v) => v + 1);
  }, []);

  /** Loads what is missing of seqs from…to (inclusive). */
  const ensure = useCallback(
    (from: number, to: number) => {
      const map = cache.current;
      if (loading.current) return;
      let a = from;
      while (a <= to && map.has(a)) a++;
      let b = to;
      while (b > a && map.has(b)) b--;
      if (a > b) return;
      loading.current = true;
      void fetchEventPage(runId, { after: a - 1, limit: Math.min(RANGE_LIMIT, b - a + 1) }).then((page) => {
        loading.current = false;
        if (!page.ok) return setError(`${page.error.code}: ${page.error.message}`);
        setError(null);
        put(page.value.events, (from + to) / 2);
      });
    },
    [runId, put],
  );

  return { get: (seq: number) => cache.current.get(seq), put, ensure, version, error };
}

export interface EventFilter {
  types: string[];
  q: string;
}

export const isFiltered = (f: EventFilter): boolean => f.types.length > 0 || f.q !== "";

/**
 * The events that match a filter, from the run's first, read a bounded scan at a time (the
 * server's `next` is how far it scanned): `more(latest)` reads on while the reader is at the end
 * of the matches and the scan has not reached the run's newest event.
 */
export function useEventMatches(runId: string, filter: EventFilter) {
  const [state, setState] = useState({ events: [] as TimelineEvent[], scannedTo: 0, error: null as string | null });
  const loading = useRef(false);
  const generation = useRef(0);
  const key = `${filter.types.join(",")}\n${filter.q}`;
  useEffect(() => {
    generation.current += 1;
    loading.current = false;
    setState({ events: [], scannedTo: 0, error: null });
  }, [runId, key]);

  const more = useCallback(
    (latest: number) => {
      if (!isFiltered(filter) || loading.current) return;
      if (state.scannedTo >= latest || state.events.length >= MAX_MATCHES || state.error) return;
      loading.current = true;
      const mine = generation.current;
      void fetchEventPage(runId, {
        after: state.scannedTo,
        limit: Math.min(MATCH_PAGE, MAX_MATCHES - state.events.length),
        types: filter.types,
        q: filter.q,
      }).then((page) => {
        if (mine !== generation.current) return;
        loading.current = false;
        setState((s) =>
          page.ok
            ? { events: [...s.events, ...page.value.events], scannedTo: page.value.next, error: null }
            : { ...s, error: `${page.error.code}: ${page.error.message}` },
        );
      });
    },
    [runId, filter, state],
  );

  return { ...state, more };
}
