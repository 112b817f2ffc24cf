import { request, type ClientRequest } from "node:http";
import { parseSse } from "./support.js";

/** An SSE follower over a raw socket, so that a test can cut it off at any moment. */
export interface Follower {
  /** Complete `prp` events so far. */
  events(): Array<{ seq: number; data: string }>;
  ended(): boolean;
  /** Settles when the server closes the stream (or the test cuts it). */
  closed: Promise<void>;
  status: Promise<number>;
  cut(): void;
}

export function follow(baseUrl: string, path: string, token: string, headers: Record<string, string> = {}): Follower {
  let text = "";
  let req: ClientRequest;
  let resolveStatus!: (n: number) => void;
  const status = new Promise<number>((r) => (resolveStatus = r));
  const closed = new Promise<void>((resolve) => {
    req = request(
      `${baseUrl}${path}`,
      { headers: { accept: "text/event-stream", authorization: `Bearer ${token}`, ...headers } },
      (res) => {
        resolveStatus(res.statusCode ?? 0);
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("close", () => resolve());
        res.on("error", () => resolve());
      },
    );
    req.on("error", () => {
      resolveStatus(0);
      resolve();
    });
    req.end();
  });
  // Only whole blocks: a cut may leave half a frame, which a client discards.
  const complete = () => parseSse(text.slice(0, text.lastIndexOf("\n\n") + 2));
  return {
    events: () =>
      complete()
        .filter((e) => e.event === "prp")
        .map((e) => ({ seq: Number(e.id), data: e.data })),
    ended: () => complete().some((e) => e.event === "end"),
    closed,
    status,
    cut: () => req.destroy(),
  };
}
