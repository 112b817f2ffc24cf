import { decodeLine } from "../contract/decode.js";
import type { KindValues } from "../contract/kinds.js";
import type * as T from "../contract/generated/types.js";

/**
 * The runner's stdout in local mode (wire.md §14.5): one `paperclip.runner.stream.v1` record per
 * line, either a PRP event or the receipt of a command. The schema runner-stream.schema.json
 * defines both.
 */
export const STREAM_SCHEMA = "paperclip.runner.stream.v1";

export type CommandReceipt = T.RunnerCommandReceipt;
export type StreamRecord = KindValues["runner-stream-record"];

/** `eventLine` is the event's JSON exactly as the codec checked it, embedded without re-serialising. */
export const eventRecordLine = (eventLine: string): string =>
  `{"schema":"${STREAM_SCHEMA}","kind":"event","event":${eventLine}}`;
export const receiptRecordLine = (receipt: CommandReceipt): string =>
  JSON.stringify({ schema: STREAM_SCHEMA, kind: "receipt", receipt });

/** Parses a stream line; null when it is not a valid record of this stream. */
export function parseStreamRecord(line: string): StreamRecord | null {
  const decoded = decodeLine(line, "runner-stream-record");
  return decoded.ok ? decoded.value : null;
}
