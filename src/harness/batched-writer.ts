/**
 * Writes lines to a stream in batches: lines written in one turn of the event loop go out in
 * one write (or one per 64 KiB), instead of one system call per line. `write` reports the
 * stream's backpressure; `onDrain` calls back once when a congested stream has drained.
 *
 * With `onReaderGone`, a stream that fails (EPIPE: whoever read it closed its end) is no
 * exception: the callback is told once, and from then on lines are dropped and nobody waits for
 * a drain that will never come.
 */
export class BatchedLineWriter {
  private parts: string[] = [];
  private bytes = 0;
  private scheduled = false;
  private congested = false;
  private gone = false;
  private readonly drainWaiters: Array<() => void> = [];

  constructor(
    private readonly stream: NodeJS.WritableStream,
    private readonly maxBatchBytes = 65_536,
    onReaderGone?: (error: Error) => void,
  ) {
    if (!onReaderGone) return;
    stream.on("error", (error: Error) => {
      if (this.gone) return;
      this.gone = true;
      this.parts = [];
      this.bytes = 0;
      this.congested = false;
      onReaderGone(error);
      for (const resume of this.drainWaiters.splice(0)) resume();
    });
  }

  /** Whether the stream's reader is gone (only with `onReaderGone`): lines are then dropped. */
  get readerGone(): boolean {
    return this.gone;
  }

  /** Queues one line (without its newline); false when the stream is behind. */
  write(line: string): boolean {
    if (this.gone) return true;
    this.parts.push(line, "\n");
    this.bytes += line.length + 1;
    if (this.bytes >= this.maxBatchBytes) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return !this.congested;
  }

  /** Calls `resume` once the stream has drained (at once if it is not congested). */
  onDrain(resume: () => void): void {
    if (!this.congested) return resume();
    this.drainWaiters.push(resume);
  }

  /** Writes what is queued now; `done` runs once the stream has taken it. */
  flush(done?: () => void): void {
    this.scheduled = false;
    if (this.gone) return done?.();
    if (this.parts.length === 0) {
      if (done) this.stream.write("", done);
      return;
    }
    const chunk = this.parts.join("");
    this.parts = [];
    this.bytes = 0;
    const ok = this.stream.write(chunk, done ? () => done() : undefined);
    if (!ok && !this.congested) {
      this.congested = true;
      this.stream.once("drain", () => {
        this.congested = false;
        for (const resume of this.drainWaiters.splice(0)) resume();
      });
    }
  }
}
