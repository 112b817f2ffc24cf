import { useEffect, useState } from "preact/hooks";
import { runStreamUrl, type RunView, type TimelineEvent } from "./api.js";
import { openStream } from "./stream.js";

const storageKey = (runId: string) => `prp-console:timeline:${runId}`;

function restore(runId: string): TimelineEvent[] {
  try {
    return JSON.parse(sessionStorage.getItem(storageKey(runId)) ?? "[]") as TimelineEvent[];
  } catch {
    return [];
  }
}

/**
 * A live run: its timeline, streamed as events commit, and its latest view. The timeline is
 * kept in sessionStorage, so that a reload resumes the stream from the last position seen
 * (`?after=`, and Last-Event-ID on the browser's own reconnects): each event is shown once,
 * in order, and one that does not follow the last (a gap) is never appended.
 */
export function useLiveRun(runId: string, enabled: boolean) {
  const [timeline, setTimeline] = useState<TimelineEvent[]>(() => (enabled ? restore(runId) : []));
  const [view, setView] = useState<RunView | null>(null);
  const [streamError, setStreamError] = useState<string | null>(null);
  useEffect(() => {
    if (!enabled) return;
    let events = restore(runId);
    const source = openStream(runStreamUrl(runId, events.at(-1)?.position ?? 0));
    source.addEventListener("prp", (e) => {
      const item = JSON.parse((e as MessageEvent<string>).data) as TimelineEvent;
      const last = events.at(-1)?.position ?? 0;
      if (item.position <= last) return;
      if (item.position !== last + 1) return setStreamError(`event ${last + 1} is missing from the stream; reload the page`);
      events = [...events, item];
      sessionStorage.setItem(storageKey(runId), JSON.stringify(events));
      setTimeline(events);
    });
    source.addEventListener("view", (e) => {
      setStreamError(null);
      setView(JSON.parse((e as MessageEvent<string>).data) as RunView);
    });
    source.onerror = () => setStreamError("the live stream was interrupted; reconnecting…");
    return () => source.close();
  }, [runId, enabled]);
  return { timeline, view, streamError };
}
