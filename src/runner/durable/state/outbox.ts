import type { Priority } from "../../../contract/priority.js";
import { MAX_FRAME_BYTES } from "../../../contract/versions.js";
import type { ProviderRecovery } from "../provider-recovery.js";
import type { StateHandle } from "./handle.js";
import type { StateRecovery } from "./recovery.js";

export type Admission =
  | { ok: true; sourceSeq: number; envelope: string }
  | {
      ok: false;
      code: "backpressure" | "p0_storage_exhausted" | "frame_too_large" | "event_too_large" | "state_unrecoverable";
      message: string;
    };

/** Defaults of runtime.md §15.2. */
export const DEFAULT_MAX_OUTBOX_BYTES = 16 * 1024 * 1024;
export const DEFAULT_P0_RESERVE_BYTES = 1024 * 1024;

/**
 * The outbox (runtime.md §5.7): every event committed under the next sourceSeq before it is
 * sent, held until the cumulative ACK trims it, within the outbox's byte limits.
 */
export class StateOutbox {
  constructor(
    private readonly h: StateHandle,
    private readonly recovery: StateRecovery,
  ) {}

  /**
   * Commits one event to the outbox under the next sourceSeq, before anything is sent.
   * `build(sourceSeq)` returns the exact bytes that will go on the wire. A non-P0 event past
   * the soft limit (outbox − P0 reserve) is refused and turns backpressure on, to be offered
   * again once ACKs free room; a P0 event past the whole outbox leaves the state unrecoverable
   * (runtime.md §5.7). An event larger than its whole class limit can never fit: event_too_large.
   * `recovery` is what the event changes in the provider recovery record, committed with it;
   * `retain`, a capability or goal event's payload, replaces the last one of its kind kept for
   * a replacement process (runtime.md §9); `alsoCommit`, any other state the event settles (a
   * credential event no longer pending). All commit in the event's transaction.
   */
  admit(
    priority: Priority,
    eventType: string,
    build: (sourceSeq: number) => string,
    recovery: Partial<ProviderRecovery> | null = null,
    retain: Record<string, unknown> | null = null,
    alsoCommit?: () => void,
  ): Admission {
    return this.h.db.transaction((): Admission => {
      const c = this.h.counters();
      if (c.lifecycle === "unrecoverable")
        return { ok: false, code: "state_unrecoverable", message: "the state is unrecoverable; no event is admitted" };
      const envelope = build(c.nextSourceSeq);
      const size = Buffer.byteLength(envelope);
      if (size > MAX_FRAME_BYTES)
        return {
          ok: false,
          code: "frame_too_large",
          message: `a ${size}-byte ${eventType} event is over the ${MAX_FRAME_BYTES}-byte frame limit`,
        };
      const limit =
        priority === 0 ? this.h.binding.maxOutboxBytes : this.h.binding.maxOutboxBytes - this.h.binding.p0ReserveBytes;
      if (size > limit)
        return {
          ok: false,
          code: "event_too_large",
          message: `a ${size}-byte P${priority} ${eventType} can never fit: the outbox takes ${limit} bytes of P${priority} events`,
        };
      const total = c.outboxBytes + size;
      if (priority !== 0 && total > this.h.binding.maxOutboxBytes - this.h.binding.p0ReserveBytes) {
        this.h
          .sql(
            "UPDATE runner_state SET backpressure = 1, lifecycle = CASE WHEN lifecycle = 'ready' THEN 'backpressure' ELSE lifecycle END WHERE id = 1",
          )
          .run();
        this.h.noteDiagnostic(
          "backpressure",
          `refused a ${size}-byte P${priority} ${eventType}: the outbox holds ${c.outboxBytes} of ${this.h.binding.maxOutboxBytes - this.h.binding.p0ReserveBytes} bytes before the P0 reserve`,
        );
        return {
          ok: false,
          code: "backpressure",
          message: `the outbox is over its soft limit; ${eventType} was refused, not dropped`,
        };
      }
      if (total > this.h.binding.maxOutboxBytes) {
        this.h.sql("UPDATE runner_state SET lifecycle = 'unrecoverable' WHERE id = 1").run();
        this.h.noteDiagnostic(
          "p0_storage_exhausted",
          `a P0 ${eventType} of ${size} bytes does not fit the ${this.h.binding.maxOutboxBytes}-byte outbox`,
        );
        return {
          ok: false,
          code: "p0_storage_exhausted",
          message: "a P0 event does not fit the outbox: the state is unrecoverable",
        };
      }
      this.h
        .sql("INSERT INTO outbox (source_seq, priority, event_type, envelope, byte_size) VALUES (?, ?, ?, ?, ?)")
        .run(c.nextSourceSeq, priority, eventType, envelope, size);
      // The run's terminal is remembered apart from the outbox, which forgets it once acknowledged.
      if (eventType === "run.terminal")
        this.h
          .sql("INSERT OR IGNORE INTO meta (key, value) VALUES ('terminal_source_seq', ?)")
          .run(String(c.nextSourceSeq));
      if (recovery) this.recovery.update(recovery);
      if (retain) this.recovery.retain(eventType, retain);
      alsoCommit?.();
      this.h
        .sql(
          "UPDATE runner_state SET next_source_seq = next_source_seq + 1, outbox_bytes = ?, peak_outbox_bytes = MAX(peak_outbox_bytes, ?) WHERE id = 1",
        )
        .run(total, total);
      return { ok: true, sourceSeq: c.nextSourceSeq, envelope };
    })();
  }

  /** Up to `limit` unacknowledged events after `sourceSeq`, in order, as their committed bytes. */
  pendingAfter(sourceSeq: number, limit: number): Array<{ sourceSeq: number; envelope: string }> {
    return (
      this.h
        .sql("SELECT source_seq, envelope FROM outbox WHERE source_seq > ? ORDER BY source_seq LIMIT ?")
        .all(sourceSeq, limit) as Array<{ source_seq: number; envelope: string }>
    ).map((r) => ({ sourceSeq: r.source_seq, envelope: r.envelope }));
  }

  /** Every unacknowledged event, in order, as the exact bytes first committed (for resend). */
  pending(): Array<{ sourceSeq: number; envelope: string }> {
    return (
      this.h.sql("SELECT source_seq, envelope FROM outbox ORDER BY source_seq").all() as Array<{
        source_seq: number;
        envelope: string;
      }>
    ).map((r) => ({ sourceSeq: r.source_seq, envelope: r.envelope }));
  }

  /**
   * Applies a cumulative ACK: every event ≤ n is committed at the authority. Refused when it
   * goes backward or past the highest event produced. Trims the outbox and clears
   * backpressure once three quarters of the soft limit or less are held, in one transaction.
   */
  applyAck(
    n: number,
  ): { ok: true; trimmed: number } | { ok: false; code: "ack_backward" | "ack_beyond_produced"; message: string } {
    return this.h.db.transaction(() => {
      const c = this.h.counters();
      if (!Number.isSafeInteger(n) || n < c.ackedSourceSeq)
        return {
          ok: false as const,
          code: "ack_backward" as const,
          message: `ack ${n} is behind the acknowledged ${c.ackedSourceSeq}`,
        };
      if (n > c.nextSourceSeq - 1)
        return {
          ok: false as const,
          code: "ack_beyond_produced" as const,
          message: `ack ${n} is past the highest event produced, ${c.nextSourceSeq - 1}`,
        };
      const freed = this.h
        .sql("SELECT COALESCE(SUM(byte_size), 0) AS b, COUNT(*) AS n FROM outbox WHERE source_seq <= ?")
        .get(n) as { b: number; n: number };
      this.h.sql("DELETE FROM outbox WHERE source_seq <= ?").run(n);
      const remaining = c.outboxBytes - freed.b;
      // Hysteresis: clearing right under the soft limit would let one event in and refuse the
      // next, an episode per event; a quarter of the soft limit must be free first.
      const clear = remaining <= ((this.h.binding.maxOutboxBytes - this.h.binding.p0ReserveBytes) * 3) / 4;
      this.h
        .sql(
          `UPDATE runner_state SET acked_source_seq = ?, outbox_bytes = ?${clear ? ", backpressure = 0, lifecycle = CASE WHEN lifecycle = 'backpressure' THEN 'ready' ELSE lifecycle END" : ""} WHERE id = 1`,
        )
        .run(n, remaining);
      return { ok: true as const, trimmed: freed.n };
    })();
  }
}
