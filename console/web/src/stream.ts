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
 * header the API needs. It resumes as EventSource does: with Last-Event-ID, after `retry:`
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
      const body = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
      this.refused = `${res.status} ${body.error?.code ?? res.statusText}: ${body.error?.message ?? "the console refused the stream"}`;
      return true;
    }
    this.failures = 0;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let event = { type: "", data: [] as string[] };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      buffer += value;
      const lines = buffer.split(/\r?\n/); // the console's server ends its lines with \n
      buffer = lines.pop()!; // the rest of a line not yet whole
      for (const line of lines) {
        if (line === "") {
          if (event.data.length > 0) this.listeners.dispatchEvent(new MessageEvent(event.type || "message", { data: event.data.join("\n"), lastEventId: this.lastEventId }));
          event = { type: "", data: [] };
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        const text = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event.type = text;
        else if (field === "data") event.data.push(text);
        else if (field === "id" && !text.includes("\0")) this.lastEventId = text;
        else if (field === "retry" && /^\d+$/.test(text)) this.retryMs = Number(text);
      }
    }
  }
}

/** Opens one of the console's event streams (a run's, or the runs list's): the one place the page does. */
export const openStream = (url: string): LiveStream => new FetchEventStream(url);
