/** The SSE frames of the event stream, encoded once and sent as the same bytes to every follower. */

/** One committed event: `id` is its sourceSeq, `data` its envelope exactly as committed (one line of JSON). */
export const eventFrame = (sourceSeq: number, envelope: string): string =>
  `id: ${sourceSeq}\nevent: prp\ndata: ${envelope}\n\n`;

/** Sent after run.terminal: nothing follows, the stream closes; a client stops reconnecting. */
export const END_FRAME = Buffer.from("event: end\ndata: {}\n\n");

/** Keeps idle proxies and clients from timing the stream out. */
export const KEEP_ALIVE_FRAME = Buffer.from(":\n\n");

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  connection: "keep-alive",
  "x-accel-buffering": "no",
} as const;

/**
 * The sequence a stream resumes after: the Last-Event-ID a reconnecting client sends, else the
 * `after` query, else 0 (from the start). Undefined for a value that is not a sequence.
 */
export function resumePoint(lastEventId: string | string[] | undefined, after: number | undefined): number | undefined {
  const header = Array.isArray(lastEventId) ? lastEventId[0] : lastEventId;
  if (header !== undefined && header !== "") {
    if (!/^\d{1,15}$/.test(header)) return undefined;
    return Number(header);
  }
  return after ?? 0;
}
