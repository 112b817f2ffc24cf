/** A span of milliseconds in the words a person reads it in: `15 min`, `30 s`, `250 ms`. */
export function spanWords(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1_000 && ms % 1_000 === 0) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

/**
 * A stalled run's end in one sentence (the console's "why", a reader's summary): how long it was
 * silent — the stopReason's message says — and how far the stall policy went: the interrupt the
 * harness honoured, or the cancel after the grace. Null for any other terminal.
 */
export function stalledWords(terminal: Record<string, unknown>): string | null {
  const stop = terminal.stopReason as { code?: unknown; message?: unknown } | undefined;
  if (stop?.code !== "stalled") return null;
  const silent = typeof stop.message === "string" && stop.message !== "" ? stop.message : "no progress reported";
  const policy =
    terminal.turnTerminalState === "interrupted"
      ? "the turn was interrupted"
      : "the turn was interrupted, then the run cancelled when it did not end within the grace";
  return `stalled — ${silent}; ${policy}`;
}
