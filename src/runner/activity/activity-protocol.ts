import type { Socket } from "node:net";
import { parseJson } from "../../contract/json-input.js";
import { isPlainObject } from "../../contract/plain-object.js";
import { BoundedLineReader } from "../../harness/line-reader.js";

/**
 * The local exchange between `prp-runnerd record-activity` (or `notification-context`) and the
 * runner that serves the endpoint: one JSON line each way over the Unix socket the descriptor
 * names, then the connection closes.
 */
export const DESCRIPTOR_SCHEMA = "paperclip.runtime_notification.endpoint.v1";
export const MAX_MESSAGE_BYTES = 4096;

/** `secret`: the harness generation's (see HarnessActivity); absent when the caller was never given one, and then refused. */
export type ActivityRequest = (
  { op: "context" } | { op: "record"; context: string; namespace: string; activityKey: string }
) & { secret?: string };

export type ActivityReply = { ok: true; context?: string } | { ok: false; code: ActivityRefusal; message: string };

export type ActivityRefusal =
  "invalid_argument" | "invalid_request" | "generation_refused" | "context_invalidated" | "run_ended";

/** Calls `onMessage` with the first line the peer sends: parsed, or null when it is not a JSON object within bounds. */
export function readOneMessage(socket: Socket, onMessage: (message: Record<string, unknown> | null) => void): void {
  const reader = new BoundedLineReader(MAX_MESSAGE_BYTES);
  let done = false;
  const deliver = (events: ReturnType<BoundedLineReader["push"]>) => {
    for (const e of events) {
      if (done) return;
      done = true;
      onMessage(e.kind === "line" ? parseObject(e.text) : null);
    }
  };
  socket.on("data", (chunk: Buffer) => deliver(reader.push(chunk)));
  socket.on("end", () => deliver(reader.end())); // a peer that closes without a line is left to its 'close'
}

/** Through the codec's parser, so a deep or duplicate-keyed message is refused like any other bad one. */
function parseObject(text: string): Record<string, unknown> | null {
  const parsed = parseJson(text, MAX_MESSAGE_BYTES);
  return parsed.ok && isPlainObject(parsed.value) ? parsed.value : null;
}
