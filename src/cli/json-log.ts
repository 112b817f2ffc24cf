/** One structured log line: what happened, when, how serious, and the ids it concerns. */
export interface LogRecord {
  level: "info" | "warn" | "error";
  event: string;
  [field: string]: unknown;
}

/**
 * A JSON-lines logger for a daemon: one object per line, `time` first, on the stream given
 * (stderr). Callers pass ids and codes, never a ticket, token, key or URL password.
 */
export function jsonLogger(write: (line: string) => void, now: () => Date = () => new Date()): (record: LogRecord) => void {
  return (record) => write(`${JSON.stringify({ time: now().toISOString(), ...record })}\n`);
}
