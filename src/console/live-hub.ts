import type { RunBook } from "./run-book.js";

type Listener = (changedRuns: ReadonlySet<string>) => void;

/**
 * Refreshes the run book every `pollMs` while anyone listens (or always, for a live source:
 * the runs list must be current when a page asks), and tells each listener what changed.
 * Polling the store is what `prp events --follow` does: the SQLite store has no cross-process
 * notices, and one read per tick serves every open page.
 */
export class LiveHub {
  private readonly listeners = new Set<Listener>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly book: RunBook,
    private readonly pollMs: number,
    private readonly onError: (err: Error) => void,
  ) {}

  start(): void {
    if (!this.book.source.live) return;
    this.timer = setInterval(() => {
      this.running = this.running
        .catch(() => {})
        .then(() => this.tick())
        .catch(this.onError);
    }, this.pollMs);
  }

  /** Reads what is new now (before answering a request, so the answer is current). */
  refresh(): Promise<void> {
    // After the last read, even a failed one (already reported): each caller gets its own outcome.
    const next = this.running.catch(() => {}).then(() => this.tick());
    this.running = next;
    return next;
  }

  listen(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running.catch(() => {});
  }

  private async tick(): Promise<void> {
    const { runs } = await this.book.refresh();
    if (runs.size > 0) for (const listener of this.listeners) listener(runs);
  }
}
