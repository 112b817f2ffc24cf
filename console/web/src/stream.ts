import { createParser } from "eventsource-parser";
import { authHeaders } from "./token.js";

/** Waits before reconnecting: the server's `retry:` at first, doubling on each failure up to this. */
const MAX_BACKOFF_MS = 30_000;

/** What the page uses of an event stream: EventSource's surface, which this reader keeps. */
export interface LiveStream {
  addEventListener(type: string, listener: (event: MessageEvent<string>) => void): void;
  onerror: ((event: Event) => void) | null;
  /** Set when the server refused the stream for good (a 4xx): why, in words; no retry follows. */
  readonly refused: string | null;
  close(): void;
}

/**
 * Server-Sent Events read with fetch(), because EventSource cannot send the Authorization
 * header the API needs; eventsource-parser parses the stream as the SSE standard says. It resumes as EventSource does: with Last-Event-ID, after `retry:`
 * milliseconds (backing off while the server is unreachable). A 4xx is final: no retry helps.
 */
class FetchEventStream implements LiveStream {
  onerror: ((event: Event) => void) | null = null;
  refused: string | null = null;
  private readonly abort = new AbortController();
  private readonly listeners = new EventTarget();
  private lastEventId = "";
  private retryMs = 1_000;
  private failures = 0;

  constructor(private readonly url: string) {
    void this.run();
  }

  addEventListener(type: string, listener: (event: MessageEvent<string>) => void): void {
    this.listeners.addEventListener(type, listener as EventListener);
  }

  close(): void {
    this.abort.abort();
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      const final = await this.connect().catch(() => false);
      if (this.abort.signal.aborted) return;
      this.onerror?.(new Event("error"));
      if (final) return;
      this.failures += 1;
      const wait = Math.min(Math.max(this.retryMs, 250) * 2 ** (this.failures - 1), MAX_BACKOFF_MS);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** One connection, read to its end; true when the refusal is final. */
  private async connect(): Promise<boolean> {
    const headers: Record<string, string> = { accept: "text/event-stream", ...authHeaders() };
    if (this.lastEventId !== "") headers["last-event-id"] = this.lastEventId;
    const res = await fetch(this.url, { headers, cache: "no-store", signal: this.abort.signal });
    if (!res.ok || res.body === null) {
      if (res.status < 400 || res.status >= 500) return false;
      const body = (await res.json().catch(() => ({}))) as { code?: string; message?: string };
      this.refused = `${res.status} ${body.code ?? res.statusText}: ${body.message ?? "the console refused the stream"}`;
      return true;
    }
    this.failures = 0;
    const parser = createParser({
      onEvent: (e) => {
        if (e.id !== undefined) this.lastEventId = e.id;
        this.listeners.dispatchEvent(
          new MessageEvent(e.event ?? "message", { data: e.data, lastEventId: this.lastEventId }),
        );
      },
      onRetry: (ms) => (this.retryMs = ms),
    });
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      parser.feed(value);
    }
  }
}

/** Opens a run's event stream (GET /v1/runs/{runId}/events as SSE): the one place the page does. */
export const openStream = (url: string): LiveStream => new FetchEventStream(url);
