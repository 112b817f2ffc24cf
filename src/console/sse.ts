import type { ServerResponse } from "node:http";

/** A comment line now and then keeps proxies and the browser from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

export interface EventStream {
  /** One SSE message; with `id`, the browser sends it back as Last-Event-ID when it reconnects. */
  send(event: string, data: unknown, id?: number): void;
  closed(): boolean;
}

/** Opens a Server-Sent Events response; `onClose` runs once when the page goes away. */
export function openEventStream(res: ServerResponse, onClose: () => void): EventStream {
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  // An open stream is quiet between events: the server's idle-socket timeout is not for it.
  res.setTimeout(0);
  res.write("retry: 1000\n\n");
  let closed = false;
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  res.on("close", () => {
    closed = true;
    clearInterval(keepalive);
    onClose();
  });
  return {
    send(event, data, id) {
      if (closed) return;
      res.write(`${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    closed: () => closed,
  };
}

/** Where a stream resumes: the Last-Event-ID the browser sends on reconnect, else `?after=`, else 0. */
export function resumeAfter(lastEventId: string | string[] | undefined, after: string | null): number {
  const text = typeof lastEventId === "string" ? lastEventId : (after ?? "0");
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}
