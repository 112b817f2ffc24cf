/** The console's pages, addressed by the URL's hash so that a reload or a shared link lands on the same page. */
export type Route =
  | { page: "runs" }
  | { page: "new" }
  | { page: "workers" }
  | { page: "run"; runId: string; tab: "conversation" | "events"; eventSeq: number | null };

/**
 * `#/` runs, `#/new` the new-run form, `#/workers` the queue and workers, `#/run/ID` a run's
 * conversation, `#/run/ID/events` its event history, `#/run/ID/events/SEQ` one event of it.
 */
export function parseRoute(hash: string): Route {
  if (hash === "#/new") return { page: "new" };
  if (hash === "#/workers") return { page: "workers" };
  const m = /^#\/run\/([^/]+)(?:\/(events)(?:\/(\d+))?)?$/.exec(hash);
  if (!m) return { page: "runs" };
  return {
    page: "run",
    runId: decodeURIComponent(m[1]!),
    tab: m[2] === "events" ? "events" : "conversation",
    eventSeq: m[3] === undefined ? null : Number(m[3]),
  };
}

/** The address of a run's page, of its event history, or of one of its events. */
export function runHref(runId: string, tab: "conversation" | "events" = "conversation", eventSeq?: number): string {
  const base = `#/run/${encodeURIComponent(runId)}`;
  if (tab === "conversation") return base;
  return eventSeq === undefined ? `${base}/events` : `${base}/events/${eventSeq}`;
}
