import { fail, ok, type Result } from "../errors.js";
import { COMMITTED_WINDOW } from "../limits.js";
import { appended, batchedAppendRefusal, callbackFailed, redeliveryRefusal, type BatchRun } from "../store-rules.js";
import { eventFrom, type Row } from "../store-rows.js";
import type {
  BatchedEvent,
  CommittedEventRow,
  EventsPart,
  LoggedEvent,
  NewCommittedEvent,
  WithinCommit,
} from "../store.js";
import type { SqliteHandle } from "./handle.js";

/**
 * Within one batch: each run's row and committed terminal as the batch's earlier items left
 * them, and the runs whose cursor moved but is not yet written. A run's cursor and window trim
 * are written once per batch, not once per event (`writeCursor`): both depend only on its last
 * event, and the batch's one transaction makes them atomic with every row anyway.
 */
interface Batch {
  runs: Map<string, BatchRun>;
  moved: Set<string>;
}

/** Committed events: the window of the newest 64 and the run log, committed one by one or as a group. */
export class SqliteEvents implements EventsPart {
  constructor(private readonly h: SqliteHandle) {}

  committedEvent(runId: string, sourceEventId: string): Promise<CommittedEventRow | undefined> {
    return this.h.read(() => {
      const r = this.h
        .sql("SELECT * FROM committed_events WHERE run_id = ? AND source_event_id = ?")
        .get(runId, sourceEventId) as Row | undefined;
      return r ? eventFrom(r) : undefined;
    });
  }

  committedWindow(runId: string): Promise<CommittedEventRow[]> {
    return this.h.read(() =>
      (this.h.sql("SELECT * FROM committed_events WHERE run_id = ? ORDER BY source_seq").all(runId) as Row[]).map(
        eventFrom,
      ),
    );
  }

  eventLog(runId: string, afterSourceSeq: number, limit: number): Promise<LoggedEvent[]> {
    // Rows as arrays, made into LoggedEvents at once: a long run's cold fold reads every row, and
    // an object per row keyed by column name was a third of the read's time and garbage.
    return this.h.read(() =>
      (
        this.h
          .sql(
            "SELECT source_seq, source_event_id, event_type, priority, envelope, committed_at FROM event_log WHERE run_id = ? AND source_seq > ? ORDER BY source_seq LIMIT ?",
          )
          .raw(true)
          .all(runId, afterSourceSeq, limit) as Array<[number, string, string, number, string, number]>
      ).map(([sourceSeq, sourceEventId, eventType, priority, envelope, committedAtUnixMs]) => ({
        sourceSeq,
        sourceEventId,
        eventType,
        priority,
        envelope,
        committedAtUnixMs,
      })),
    );
  }

  async countRedelivery(
    runId: string,
    connectionId: string,
    sourceEventId: string,
    envelope: string,
  ): Promise<Result<{ ackedSourceSeq: number }>> {
    return this.h.write((): Result<{ ackedSourceSeq: number }> => {
      const run = this.h.currentRun(runId, connectionId);
      if (!run.ok) return run;
      const row = this.h
        .sql("SELECT envelope FROM committed_events WHERE run_id = ? AND source_event_id = ?")
        .get(runId, sourceEventId) as { envelope: string } | undefined;
      const refused = redeliveryRefusal(sourceEventId, row?.envelope, envelope);
      if (refused) return refused;
      this.h
        .sql("UPDATE committed_events SET delivery_count = delivery_count + 1 WHERE run_id = ? AND source_event_id = ?")
        .run(runId, sourceEventId);
      this.h.sql("UPDATE runs SET replay_deliveries = replay_deliveries + 1 WHERE run_id = ?").run(runId);
      return ok({ ackedSourceSeq: run.value.acked_source_seq as number });
    });
  }

  async commitEvent(
    runId: string,
    connectionId: string,
    event: NewCommittedEvent,
    nowMs: number,
    withinCommit?: WithinCommit,
  ): Promise<Result<{ ackedSourceSeq: number }>> {
    const [result] = await this.commitEvents([{ runId, connectionId, event, withinCommit }], nowMs);
    return result!;
  }

  async commitEvents(
    items: readonly BatchedEvent[],
    nowMs: number,
  ): Promise<Array<Result<{ ackedSourceSeq: number }>>> {
    while (this.h.held !== null) await this.h.held;
    let release = (): void => undefined;
    this.h.held = new Promise<void>((resolve) => (release = resolve));
    let committed = false;
    try {
      this.h.db.exec("BEGIN IMMEDIATE");
      const batch: Batch = { runs: new Map(), moved: new Set() };
      const results: Array<Result<{ ackedSourceSeq: number }>> = [];
      for (const item of items)
        results.push(
          item.withinCommit
            ? await this.commitHosted(item, item.withinCommit, nowMs, batch)
            : this.appendEvent(item, nowMs, batch),
        );
      for (const runId of batch.moved) this.writeCursor(runId, batch);
      this.h.db.exec("COMMIT");
      committed = true;
      return results;
    } finally {
      if (!committed && this.h.db.inTransaction) this.h.db.exec("ROLLBACK");
      this.h.held = null;
      release();
    }
  }

  /**
   * An item with the host's callback, in its own savepoint: a host failure undoes this item
   * only. (An item without one needs none: `appendEvent` writes nothing before its checks pass.)
   */
  private async commitHosted(
    item: BatchedEvent,
    withinCommit: WithinCommit,
    nowMs: number,
    batch: Batch,
  ): Promise<Result<{ ackedSourceSeq: number }>> {
    // The host sees the run's cursor with its event, and a rollback keeps the earlier items' cursor.
    if (batch.moved.has(item.runId)) this.writeCursor(item.runId, batch);
    this.h.db.exec("SAVEPOINT batched_event");
    let result = this.appendEvent(item, nowMs, batch);
    if (result.ok) {
      try {
        this.writeCursor(item.runId, batch);
        await withinCommit({ kind: "sqlite", db: this.h.db });
      } catch (err) {
        result = callbackFailed(item.event.sourceEventId, err);
        batch.runs.delete(item.runId); // its run row is read again after the rollback
      }
    }
    // A host error that ended the whole transaction makes ROLLBACK TO throw: the batch fails.
    if (!result.ok) this.h.db.exec("ROLLBACK TO batched_event");
    this.h.db.exec("RELEASE batched_event");
    return result;
  }

  /**
   * The checks and writes of `commitEvent`, inside the caller's transaction; every check comes
   * before the event's first write (a window trim the batch owes its run may come first: it
   * leaves the state one commit per event would have). `runs` holds each run's row and
   * terminal as this batch left them, so a run's next event in the batch is checked without
   * reading them again.
   */
  private appendEvent(item: BatchedEvent, nowMs: number, { runs, moved }: Batch): Result<{ ackedSourceSeq: number }> {
    const { runId, event: e } = item;
    let run = runs.get(runId);
    if (!run) {
      const row = this.h.runRow(runId);
      run = { row, terminal: row ? this.h.terminalSourceSeq(runId) : null };
      if (row) runs.set(runId, run);
    }
    const refused = batchedAppendRefusal(run, item);
    if (refused) return refused;
    const acked = run.row!.acked_source_seq as number;
    const sameId = this.h
      .sql("SELECT source_seq FROM committed_events WHERE run_id = ? AND source_event_id = ?")
      .pluck()
      .get(runId, e.sourceEventId) as number | undefined;
    if (sameId !== undefined) {
      if (sameId > acked - COMMITTED_WINDOW)
        return fail("duplicate_mismatch", "/sourceEventId", `${e.sourceEventId} was committed under another sourceSeq`);
      this.trimWindow(runId, acked); // a row this batch has not trimmed yet: the id has left the window
    }
    if (this.h.wouldExceed(Buffer.byteLength(e.envelope))) return this.h.storeFull();
    this.h
      .sql(
        "INSERT INTO committed_events (run_id, source_seq, source_event_id, event_type, priority, envelope, delivery_count, committed_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
      )
      .run(runId, e.sourceSeq, e.sourceEventId, e.eventType, e.priority, e.envelope, nowMs);
    this.h
      .sql(
        "INSERT INTO event_log (run_id, source_seq, source_event_id, event_type, priority, envelope, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .run(runId, e.sourceSeq, e.sourceEventId, e.eventType, e.priority, e.envelope, nowMs);
    runs.set(runId, appended(run, e));
    moved.add(runId);
    return ok({ ackedSourceSeq: e.sourceSeq });
  }

  /** The run's cursor as the batch moved it, and its window trimmed to match. */
  private writeCursor(runId: string, { runs, moved }: Batch): void {
    const acked = runs.get(runId)!.row!.acked_source_seq as number;
    this.h.sql("UPDATE runs SET acked_source_seq = ? WHERE run_id = ?").run(acked, runId);
    this.trimWindow(runId, acked);
    moved.delete(runId);
  }

  /** The committed window of a run whose cursor is `acked`: its newest COMMITTED_WINDOW events. */
  private trimWindow(runId: string, acked: number): void {
    this.h
      .sql("DELETE FROM committed_events WHERE run_id = ? AND source_seq <= ?")
      .run(runId, acked - COMMITTED_WINDOW);
  }
}
