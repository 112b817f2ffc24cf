import type { AuthorityError, Result } from "./errors.js";
import type { Ingested } from "./ingest.js";

/** How a connection's ACKs leave: the cumulative ACK to send, or the refusal that closes it. */
export interface AckSink {
  /** `secondsSinceCommit`: since the newest event it covers had its outcome (the operator's commit -> ACK figure). */
  ack(ackedSourceSeq: number, secondsSinceCommit: number): void;
  refuse(error: AuthorityError): void;
}

interface Slot {
  result: Result<Ingested> | null;
  /** performance.now() when the result arrived. */
  settledAt: number;
  settled: Promise<void>;
}

/**
 * One connection's events between staging and their ACK. Outcomes settle when their
 * group commit ends, and this sends what they allow strictly in staging order: the settled
 * prefix of the queue becomes one cumulative ACK, its highest (wire.md §5.3: the ACK means every
 * event up to it is committed or deduplicated). The first refusal in that order closes the
 * connection after the ACK of what precedes it, and nothing behind it is ACKed. A flush runs
 * once the promise jobs queued with it have run, so the events of one commit, which settle
 * together, share one ACK frame, and before the sockets are read again: staging the frames that
 * arrived meanwhile would hold the ACKs back.
 */
export class AckQueue {
  private readonly slots: Slot[] = [];
  private flushing = false;
  private ended = false;

  constructor(private readonly sink: AckSink) {}

  /** Outcomes waiting for their ACK. */
  get length(): number {
    return this.slots.length;
  }

  push(outcome: Promise<Result<Ingested>>): void {
    const slot: Slot = { result: null, settledAt: 0, settled: Promise.resolve() };
    slot.settled = outcome.then((result) => {
      slot.result = result;
      slot.settledAt = performance.now();
      this.schedule();
    });
    this.slots.push(slot);
  }

  /** Settles once the oldest queued outcome has settled (backpressure on a connection that runs ahead). */
  oldest(): Promise<void> {
    return this.slots[0]?.settled ?? Promise.resolve();
  }

  /** Settles once every outcome queued so far has settled and been flushed. */
  async drained(): Promise<void> {
    while (this.slots.length > 0 && !this.ended) {
      await Promise.all(this.slots.map((s) => s.settled));
      this.flush();
    }
  }

  private schedule(): void {
    if (this.flushing) return;
    this.flushing = true;
    // After the promise jobs now queued (the other outcomes of the same commit), before any I/O.
    process.nextTick(() => {
      this.flushing = false;
      this.flush();
    });
  }

  private flush(): void {
    let acked: number | null = null;
    let committedAt = 0;
    const send = (seq: number) => this.sink.ack(seq, (performance.now() - committedAt) / 1000);
    while (!this.ended && this.slots[0]?.result) {
      const slot = this.slots.shift()!;
      const result = slot.result!;
      if (result.ok) {
        acked = result.value.ack.ackedSourceSeq;
        committedAt = slot.settledAt;
        continue;
      }
      if (acked !== null) send(acked);
      acked = null;
      this.ended = true;
      this.slots.length = 0;
      this.sink.refuse(result.error);
    }
    if (acked !== null) send(acked);
  }
}
