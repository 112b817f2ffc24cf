import { cutNoted } from "../contract/text-cut.js";
import { printableJson } from "./terminal-text.js";

/** One structured log line: what happened, when, how serious, and the ids it concerns. */
export interface LogRecord {
  level: "info" | "warn" | "error";
  event: string;
  [field: string]: unknown;
}

/** A string field's bound in a log line: a message may quote what a peer sent. */
export const MAX_LOG_FIELD_BYTES = 1024;

/**
 * A JSON-lines logger for a daemon: one object per line, `time` first, on the stream given
 * (stderr). Callers pass ids and codes, never a ticket, token, key or URL password. Each string
 * field is cut to MAX_LOG_FIELD_BYTES, with a note of how much was cut, and no character a
 * terminal would act on is left raw (`tail -f` of the log is a terminal too).
 */
export function jsonLogger(
  write: (line: string) => void,
  now: () => Date = () => new Date(),
): (record: LogRecord) => void {
  return (record) => {
    const fields = Object.fromEntries(
      Object.entries(record).map(([name, value]) => [
        name,
        typeof value === "string" ? cutNoted(value, MAX_LOG_FIELD_BYTES) : value,
      ]),
    );
    write(`${printableJson(JSON.stringify({ time: now().toISOString(), ...fields }))}\n`);
  };
}
