import type { PrpEvent } from "../contract/kinds.js";

/**
 * The runner's stdout in local mode (wire.md §14.5): one `paperclip.runner.stream.v1` record per
 * line, either a PRP event or the receipt of a command.
 */
export const STREAM_SCHEMA = "paperclip.runner.stream.v1";

export type ReceiptStatus = "accepted" | "duplicate" | "rejected";

export interface CommandReceipt {
  commandId: string | null;
  controllerSeq: number | null;
  type: string | null;
  status: ReceiptStatus;
  /** For a rejection: a code and a sentence saying why. */
  code?: string;
  reason?: string;
}

export type StreamRecord = { schema: typeof STREAM_SCHEMA; kind: "event"; event: PrpEvent } | { schema: typeof STREAM_SCHEMA; kind: "receipt"; receipt: CommandReceipt };

/** `eventLine` is the event's JSON exactly as the codec checked it, embedded without re-serialising. */
export const eventRecordLine = (eventLine: string): string => `{"schema":"${STREAM_SCHEMA}","kind":"event","event":${eventLine}}`;
export const receiptRecordLine = (receipt: CommandReceipt): string => JSON.stringify({ schema: STREAM_SCHEMA, kind: "receipt", receipt });

/** Parses a stream line; null when it is not a record of this stream. */
export function parseStreamRecord(line: string): StreamRecord | null {
  try {
    const value = JSON.parse(line) as StreamRecord;
    return value && value.schema === STREAM_SCHEMA && (value.kind === "event" || value.kind === "receipt") ? value : null;
  } catch {
    return null;
  }
}
