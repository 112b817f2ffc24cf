import type { AuthorityObserver } from "./authority-observer.js";
import type { Result } from "./errors.js";
import { storeFailureKind } from "./store-failure.js";
import type { AuthorityStore, BatchedEvent } from "./store.js";

/** The most events one store transaction takes; the rest wait for the next tick. */
export const MAX_GROUP_COMMIT = 256;

type Committed = Result<{ ackedSourceSeq: number }>;

interface Pending {
  item: BatchedEvent;
  resolve: (result: Committed) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: the events of every connection share one store transaction per
 * tick (`AuthorityStore.commitEvents`), and each caller's promise settles only after that
 * transaction has committed, so an ACK sent on it never precedes its commit.
 *
 * A tick has no fixed window. The first event after an idle spell waits one `setImmediate`, so
 * the events decoded in the same I/O turn join it; while a batch commits, new events queue, and
 * when it ends everything queued is the next batch (after its ACKs are sent and the sockets read). An idle authority adds no timer latency,
 * and under load a batch grows with the commit's own duration, the fsync its events share.
 *
 * Each event keeps its own result: a refusal or a host failure rolls back that event alone
 * (its savepoint) and the others commit. A failure of the transaction itself rejects every
 * event of that batch: none was committed, and each connection answers it as a store failure.
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private draining = false;

  constructor(
    private readonly store: AuthorityStore,
    private readonly now: () => number,
    /** Told, once per transaction and after it has committed, which runs it committed events to. */
    private readonly afterCommit: ((runIds: ReadonlySet<string>) => void) | undefined = undefined,
    private readonly maxBatch = MAX_GROUP_COMMIT,
    private readonly observer: AuthorityObserver | undefined = undefined,
  ) {}

  commit(item: BatchedEvent): Promise<Committed> {
    return new Promise<Committed>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.draining) return;
      this.draining = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    for (let first = true; this.queue.length > 0; first = false) {
      if (!first) await yieldToIo();
      const batch = this.queue.splice(0, this.maxBatch);
      const started = performance.now();
      try {
        const results = await this.store.commitEvents(
          batch.map((p) => p.item),
          this.now(),
        );
        // Before the callers hear it, so the commit -> ACK clock starts at the commit.
        this.observer?.batchCommitted(
          batch.length,
          (performance.now() - started) / 1000,
          batch.filter((_, i) => results[i]!.ok).map((p) => p.item.event),
        );
        batch.forEach((p, i) => p.resolve(results[i]!));
        if (this.afterCommit) {
          const runs = new Set(batch.filter((_, i) => results[i]!.ok).map((p) => p.item.runId));
          if (runs.size > 0) this.afterCommit(runs);
        }
      } catch (err) {
        this.observer?.storeFailed(storeFailureKind(err));
        for (const p of batch) p.reject(err);
      }
    }
    this.draining = false;
  }
}

/**
 * Between two batches: the ACKs of the one that committed leave first (they flush as its
 * results settle), then the sockets are read (the poll phase), so the events that arrived
 * meanwhile join the next batch, and only then does the next transaction hold the thread.
 */
function yieldToIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
