import type { Timers } from "../../src/transport/timers.js";

/**
 * Time the test moves: nothing fires until `advance` reaches it. A timer set while another
 * fires, and due within the same advance, fires in the same advance, in time order. Never
 * advanced, it is a frozen clock: no heartbeat beats and no lease is renewed.
 */
export class ManualTimers implements Timers {
  private t: number;
  private readonly pending = new Set<{ at: number; fn: () => void }>();

  constructor(start = Date.UTC(2026, 7, 7, 12, 0, 0)) {
    this.t = start;
  }

  readonly now = (): number => this.t;

  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + ms, fn };
    this.pending.add(timer);
    return () => this.pending.delete(timer);
  }

  every(ms: number, fn: () => void): () => void {
    let cancel = (): void => {};
    const arm = () => {
      cancel = this.after(ms, () => {
        arm();
        fn();
      });
    };
    arm();
    return () => cancel();
  }

  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: { at: number; fn: () => void } | undefined;
      for (const timer of this.pending) if (timer.at <= end && (next === undefined || timer.at < next.at)) next = timer;
      if (next === undefined) break;
      this.pending.delete(next);
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
  }

  /** When the earliest pending timer fires; undefined with none pending. */
  get nextDueAt(): number | undefined {
    let at: number | undefined;
    for (const timer of this.pending) if (at === undefined || timer.at < at) at = timer.at;
    return at;
  }

  /** Timers set and not yet fired or cancelled. */
  get waiting(): number {
    return this.pending.size;
  }
}
