import { cutUtf8 } from "../contract/text-cut.js";
import { redactText } from "./redaction.js";

/** A snapshot of the bounded log tail, as harness.exited reports it. */
export interface LogTailSnapshot {
  lines: string[];
  retainedBytes: number;
  droppedLines: number;
}

/**
 * The last lines a harness logged, bounded by count and bytes (runtime.md §4.7: 32 lines,
 * 16 KiB). Older lines are dropped first and counted, so a report says how much is missing.
 */
export class BoundedLogBuffer {
  private readonly lines: string[] = [];
  private bytes = 0;
  private dropped = 0;

  constructor(
    private readonly maxLines = 32,
    private readonly maxBytes = 16_384,
  ) {}

  push(line: string): void {
    // The tail travels in harness.exited: a credential the harness logged does not.
    let text = redactText(line).text;
    if (Buffer.byteLength(text) > this.maxBytes) text = cutUtf8(text, this.maxBytes);
    this.lines.push(text);
    this.bytes += Buffer.byteLength(text);
    while (this.lines.length > this.maxLines || this.bytes > this.maxBytes) {
      this.bytes -= Buffer.byteLength(this.lines.shift()!);
      this.dropped++;
    }
  }

  snapshot(): LogTailSnapshot {
    return { lines: [...this.lines], retainedBytes: this.bytes, droppedLines: this.dropped };
  }
}
