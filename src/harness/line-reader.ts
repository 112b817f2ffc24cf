/** What the reader yields for each line of a stream. */
/**
 * `overlong` comes once, as soon as a line grows past the limit (before its newline, which may
 * never come); `oversize` ends that line with its full length.
 */
export type LineEvent = { kind: "line"; text: string } | { kind: "overlong" } | { kind: "oversize"; bytes: number };

export const DEFAULT_MAX_LINE_BYTES = 65_536;

/**
 * Splits a byte stream into lines of at most `maxBytes` bytes (newline excluded, a trailing CR
 * stripped). Bytes are counted before any string is built, so an oversized line costs no more
 * memory than the limit: its bytes are dropped as they arrive, the reader reports one
 * `oversize` with the full length at its newline, and keeps reading the lines after it.
 * Node's readline has no such bound, which is why this is written here.
 */
export class BoundedLineReader {
  private readonly parts: Buffer[] = [];
  private kept = 0;
  private dropped = 0; // > 0 while inside an oversized line

  constructor(private readonly maxBytes = DEFAULT_MAX_LINE_BYTES) {}

  /** Feeds a chunk; returns the lines it completed, in order. */
  push(chunk: Buffer): LineEvent[] {
    const out: LineEvent[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      if (this.take(chunk.subarray(start, end))) out.push({ kind: "overlong" });
      if (nl === -1) return out;
      out.push(this.finish());
      start = nl + 1;
    }
  }

  /** At end of stream: the last line if it had no newline, or nothing. */
  end(): LineEvent[] {
    return this.kept > 0 || this.dropped > 0 ? [this.finish()] : [];
  }

  /** Keeps or drops a line's bytes; true when they took the line past the limit. */
  private take(bytes: Buffer): boolean {
    if (bytes.length === 0) return false;
    if (this.dropped === 0 && this.kept + bytes.length <= this.maxBytes + 1) {
      // +1: a CR before the newline does not count against the limit
      this.parts.push(bytes);
      this.kept += bytes.length;
      return false;
    }
    const crossed = this.dropped === 0;
    this.dropped += this.kept + bytes.length;
    this.parts.length = 0;
    this.kept = 0;
    return crossed;
  }

  private finish(): LineEvent {
    if (this.dropped > 0) {
      const bytes = this.dropped;
      this.dropped = 0;
      return { kind: "oversize", bytes };
    }
    let line = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.kept);
    this.parts.length = 0;
    this.kept = 0;
    if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
    if (line.length > this.maxBytes) return { kind: "oversize", bytes: line.length };
    return { kind: "line", text: line.toString("utf8") };
  }
}
