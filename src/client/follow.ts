/**
 * Following a run's events over SSE, with resume: each event arrives as `id: <seq>`,
 * `event: prp`, `data: <envelope>`; the stream ends with `event: end` after run.terminal (or, as the SSE rules drop an event with
 * no data line, when the server closes it right after run.terminal). A cut
 * connection (a network error, a 5xx or 429, a stream that closes before `end`, or silence
 * longer than the idle limit) is reopened with `Last-Event-ID` set to the last seq received,
 * after a bounded, growing delay; too many failures in a row end the iteration with an error.
 * Every event is checked: its seq must be exactly one more than the last, so none is yielded
 * twice, out of order, or after a gap.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { CommittedEvent, PrpEvent } from "../contract/api/generated/types.js";
import { CLIENT_ERROR_CODES, errorFromResponse, PrpApiError } from "./errors.js";

/** What `onReconnect` is told before each new connection. */
export interface ReconnectInfo {
  /** 1 for the first reconnection after a connection that delivered events, and so on. */
  attempt: number;
  /** The seq the new connection resumes after (sent as Last-Event-ID). */
  lastSeq: number;
  /** How long the client waits before reconnecting. */
  delayMs: number;
  /** Why the last connection ended. */
  error: unknown;
}

export interface FollowOptions {
  /** Start after this seq (0, the default: from the first event). */
  after?: number;
  /** Stops the iteration: it then ends without an error. */
  signal?: AbortSignal;
  /** Called before each reconnection. */
  onReconnect?: (info: ReconnectInfo) => void;
  /** Connections that may fail in a row (no event received) before the iteration throws. Default 6. */
  maxConsecutiveFailures?: number;
  /** The first reconnection delay, doubled on each failure in a row. Default 250 ms. */
  initialDelayMs?: number;
  /** The longest reconnection delay. Default 10,000 ms. */
  maxDelayMs?: number;
  /** A connection silent (no event, no keep-alive) this long is treated as cut. Default 60,000 ms. */
  idleTimeoutMs?: number;
}

/** How the client opens one connection: the URL and headers are its own business. */
export type OpenStream = (lastSeq: number, first: boolean, signal: AbortSignal) => Promise<Response>;

/** Why a connection ended without `event: end`; retried unless it is a refusal. */
class Cut extends Error {}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/** Whether an answer is worth retrying: no answer, a server error, or a rate limit. */
const retryable = (error: unknown): boolean =>
  error instanceof Cut ||
  (error instanceof PrpApiError && (error.status === 0 || error.status === 429 || error.status >= 500));

export async function* followEvents(open: OpenStream, options: FollowOptions = {}): AsyncGenerator<CommittedEvent> {
  const maxFailures = options.maxConsecutiveFailures ?? 6;
  const initialDelay = options.initialDelayMs ?? 250;
  const maxDelay = options.maxDelayMs ?? 10_000;
  const idleTimeout = options.idleTimeoutMs ?? 60_000;
  let lastSeq = options.after ?? 0;
  let failures = 0;
  let serverRetry: number | undefined;
  let terminalSeen = false;
  for (let first = true; ; first = false) {
    if (options.signal?.aborted) return;
    // One controller per connection: the caller's abort, the idle timer and a `return` from the
    // consumer all end it.
    const connection = new AbortController();
    const abort = (): void => connection.abort();
    options.signal?.addEventListener("abort", abort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const touch = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(new Cut(`no data for ${idleTimeout} ms`)), idleTimeout);
    };
    let received = false;
    let error: unknown;
    try {
      let response: Response;
      try {
        touch();
        response = await open(lastSeq, first, connection.signal);
      } catch (cause) {
        if (options.signal?.aborted) return;
        throw new PrpApiError(0, CLIENT_ERROR_CODES.network, `cannot reach the API: ${String(cause)}`, undefined, {
          cause,
        });
      }
      if (!response.ok) throw await errorFromResponse(response);
      const type = response.headers.get("content-type") ?? "";
      if (!type.startsWith("text/event-stream") || response.body === null) {
        await response.body?.cancel().catch(() => {});
        throw new PrpApiError(
          response.status,
          CLIENT_ERROR_CODES.badResponse,
          `expected an event stream, got ${type || "no content type"}`,
        );
      }
      const pending: EventSourceMessage[] = [];
      const parser = createParser({
        onEvent: (message) => pending.push(message),
        onRetry: (ms) => (serverRetry = ms),
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      try {
        for (;;) {
          let chunk: Awaited<ReturnType<typeof reader.read>>;
          try {
            chunk = await reader.read();
          } catch (cause) {
            if (options.signal?.aborted) return;
            throw connection.signal.reason instanceof Cut ? connection.signal.reason : new Cut(String(cause));
          }
          if (chunk.done) {
            // `event: end` with no data line is no event to an SSE parser; a stream closed right
            // after run.terminal has ended all the same.
            if (terminalSeen) return;
            throw new Cut("the server closed the stream before its end");
          }
          touch();
          parser.feed(chunk.value);
          while (pending.length > 0) {
            const message = pending.shift()!;
            if (message.event === "end") return;
            if (message.event !== undefined && message.event !== "prp") continue;
            const event = checked(message, lastSeq, response.status);
            lastSeq = event.seq;
            terminalSeen = (event.event as { eventType?: unknown }).eventType === "run.terminal";
            received = true;
            failures = 0;
            yield event;
            if (options.signal?.aborted) return;
          }
        }
      } finally {
        connection.abort();
        await reader.cancel().catch(() => {});
      }
    } catch (caught) {
      if (options.signal?.aborted) return;
      if (!retryable(caught)) throw caught;
      error = caught;
    } finally {
      clearTimeout(idle);
      options.signal?.removeEventListener("abort", abort);
      connection.abort();
    }
    if (!received) failures += 1;
    if (failures >= maxFailures) {
      const why = error instanceof Error ? error.message : String(error);
      throw new PrpApiError(
        error instanceof PrpApiError ? error.status : 0,
        CLIENT_ERROR_CODES.unavailable,
        `the event stream failed ${failures} times in a row; the last: ${why}`,
        undefined,
        { cause: error },
      );
    }
    const delayMs = Math.min(maxDelay, Math.max(serverRetry ?? 0, initialDelay * 2 ** Math.max(0, failures - 1)));
    options.onReconnect?.({ attempt: Math.max(1, failures), lastSeq, delayMs, error });
    if (options.signal !== undefined) await sleep(delayMs, options.signal);
    else await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}

/** The committed event a message carries, once its seq is the one that must come next. */
function checked(message: EventSourceMessage, lastSeq: number, status: number): CommittedEvent {
  const id = message.id ?? "";
  const seq = /^[0-9]{1,16}$/.test(id) ? Number(id) : NaN;
  if (!Number.isSafeInteger(seq) || seq < 1) {
    throw new PrpApiError(status, CLIENT_ERROR_CODES.badEvent, `an event without a valid id (${JSON.stringify(id)})`);
  }
  if (seq <= lastSeq) {
    throw new PrpApiError(
      status,
      CLIENT_ERROR_CODES.duplicate,
      `the stream sent seq ${seq} after seq ${lastSeq}: an event already received, or out of order`,
    );
  }
  if (seq !== lastSeq + 1) {
    throw new PrpApiError(status, CLIENT_ERROR_CODES.gap, `the stream skipped from seq ${lastSeq} to seq ${seq}`);
  }
  let event: PrpEvent;
  try {
    event = JSON.parse(message.data) as PrpEvent;
  } catch (cause) {
    throw new PrpApiError(status, CLIENT_ERROR_CODES.badEvent, `event ${seq}'s data is not JSON`, undefined, { cause });
  }
  if (event === null || typeof event !== "object" || Array.isArray(event)) {
    throw new PrpApiError(status, CLIENT_ERROR_CODES.badEvent, `event ${seq}'s data is not an event envelope`);
  }
  return { seq, event };
}
