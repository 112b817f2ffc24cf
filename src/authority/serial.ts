/**
 * Runs the operations of one run one after another, in call order, within this process.
 * Ingest must see event n committed before it judges event n+1, and a queued command must
 * take its controllerSeq before the next one reads the count; the store's compare-and-set
 * still guards against other processes, this only keeps one process from tripping itself.
 * Runs do not wait for each other.
 */
export class PerRunSerial {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(runId: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(runId) ?? Promise.resolve();
    const next = previous.then(operation); // the tail never rejects: one failure does not stop the run
    const tail = next.catch(() => undefined);
    this.tails.set(runId, tail);
    // Forget an idle run so the map does not grow with every run ever served.
    void tail.then(() => {
      if (this.tails.get(runId) === tail) this.tails.delete(runId);
    });
    return next;
  }
}
