import { cutNoted } from "../contract/text-cut.js";
import type { LogFields } from "./server-options.js";

/** A log line's bound: a member name of 500 KB in a hello must not become 500 KB of log. */
const MAX_LOG_LINE_BYTES = 1024;
/** The refusal counts kept at most; past it they start again (a run id is part of some keys). */
const MAX_REFUSAL_KEYS = 1024;

/** The server's log: every line cut to a bound, since much of it quotes what a peer sent before it authenticated. */
export class ServerLog {
  /** How many times each refusal was seen (refusal). */
  private readonly refusals = new Map<string, number>();

  constructor(private readonly sink: ((text: string, fields?: LogFields) => void) | undefined) {}

  line(text: string, fields?: LogFields): void {
    this.sink?.(cutNoted(text, MAX_LOG_LINE_BYTES), fields);
  }

  /**
   * A refusal of an unauthenticated peer, logged the 1st, 2nd, 4th, 8th… time for its key (the
   * event and code): a peer that repeats a failure cannot make the log grow with each attempt.
   */
  refusal(key: string, text: string, fields: LogFields): void {
    if (this.refusals.size >= MAX_REFUSAL_KEYS && !this.refusals.has(key)) this.refusals.clear();
    const count = (this.refusals.get(key) ?? 0) + 1;
    this.refusals.set(key, count);
    if ((count & (count - 1)) === 0)
      this.line(count === 1 ? text : `${text} (${count} times so far; logged at each power of two)`, fields);
  }
}
