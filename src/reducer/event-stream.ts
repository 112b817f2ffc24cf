import { admitText, type ContractError, type PrpEvent } from "../contract/index.js";

/** A rejected stream: the codec's typed error, and the 1-based line it is on. */
export type StreamError = ContractError & { line: number };
export type ReadStream = { ok: true; events: PrpEvent[] } | { ok: false; error: StreamError };

/** The most bytes an NDJSON event stream may have (each line is one frame, under the frame limit). */
export const MAX_EVENT_STREAM_BYTES = 64 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;
const blank = (line: Uint8Array): boolean => line.every((b) => b === 0x20 || b === 0x09 || b === CR);

/**
 * Reads an NDJSON event stream (one event envelope per line, LF or CRLF; blank lines are
 * skipped). Each line is admitted as the authority admits an event (the codec, under its frame
 * limit, and a canonical JSON form: a stream no authority could have stored is refused). The
 * stream must also hold together the way a fixture's events must (wire.md §15.1): one run, one
 * session where one is named, and a repeated sourceEventId repeating the same canonical bytes.
 * The first refusal is returned with its line number; nothing is skipped silently.
 */
export function readEventStream(bytes: Uint8Array): ReadStream {
  const events: PrpEvent[] = [];
  const firstCopy = new Map<string, string>();
  let run: string | undefined;
  let session: string | undefined;
  let start = 0;
  for (let line = 1; start < bytes.length; line++) {
    const end = bytes.indexOf(LF, start);
    const stop = end === -1 ? bytes.length : end;
    const text = bytes.subarray(start, stop);
    start = stop + 1;
    if (blank(text)) continue;
    const admitted = admitText("event", text);
    if (!admitted.ok) return { ok: false, error: { ...admitted.error, line } };
    const event = admitted.value;
    const fail = (path: string, message: string): ReadStream => ({
      ok: false,
      error: { code: "binding_mismatch", path, message, line },
    });
    run ??= event.runId;
    if (event.runId !== run) return fail("/runId", `event runId "${event.runId}" is not the stream's run "${run}"`);
    if (event.normalizedSessionId !== undefined) {
      session ??= event.normalizedSessionId;
      if (event.normalizedSessionId !== session)
        return fail(
          "/normalizedSessionId",
          `event session "${event.normalizedSessionId}" is not the stream's session "${session}"`,
        );
    }
    const first = firstCopy.get(event.sourceEventId);
    if (first === undefined) firstCopy.set(event.sourceEventId, admitted.canonical);
    else if (first !== admitted.canonical)
      return fail("", `sourceEventId "${event.sourceEventId}" is repeated with different content`);
    events.push(event);
  }
  return { ok: true, events };
}
