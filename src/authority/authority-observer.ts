import type { NewCommittedEvent } from "./store.js";

/**
 * What the authority tells its operator's instruments (src/ops/authority-metrics.ts) as it
 * works. Kept free of any metrics library so the authority does not depend on one; production
 * without metrics passes none. Every argument is a count, a duration, a committed event or a
 * code the authority itself chose: never text a peer sent.
 */
export interface AuthorityObserver {
  /** A runner handshake ended: `accepted`, or the code it was refused with. */
  handshake(outcome: "accepted" | { refused: string }): void;
  /** One group-commit transaction: its size, how long it took, the events it committed. */
  batchCommitted(batchSize: number, seconds: number, committed: readonly NewCommittedEvent[]): void;
  /** An ACK left: seconds since the newest event it covers had committed. */
  ackSent(secondsSinceCommit: number): void;
  /** A store call failed; `kind` as storeFailureKind names it. */
  storeFailed(kind: "read_only" | "full" | "unavailable"): void;
}
