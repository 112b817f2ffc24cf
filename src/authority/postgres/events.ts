import type pg from "pg";
import { fail, ok, type Result } from "../errors.js";
import { COMMITTED_WINDOW } from "../limits.js";
import {
  appended,
  appendRefusal,
  batchedAppendRefusal,
  callbackFailed,
  currentConnection,
  redeliveryRefusal,
  type BatchRun,
} from "../store-rules.js";
import { eventFrom, loggedFrom, type Row } from "../store-rows.js";
import type {
  BatchedEvent,
  CommittedEventRow,
  EventsPart,
  LoggedEvent,
  NewCommittedEvent,
  WithinCommit,
} from "../store.js";
import type { PostgresHandle } from "./handle.js";

/** Committed events: the window of the newest 64 and the run log, committed one by one or as a group. */
export class PostgresEvents implements EventsPart {
  constructor(private readonly h: PostgresHandle) {}

  async committedEvent(runId: string, sourceEventId: string): Promise<CommittedEventRow | undefined> {
    const [r] = await this.h.query("SELECT * FROM committed_events WHERE run_id = $1 AND source_event_id = $2", [
      runId,
      sourceEventId,
    ]);
    return r ? eventFrom(r) : undefined;
  }

  async committedWindow(runId: string): Promise<CommittedEventRow[]> {
    return (await this.h.query("SELECT * FROM committed_events WHERE run_id = $1 ORDER BY source_seq", [runId])).map(
      eventFrom,
    );
  }

  async eventLog(runId: string, afterSourceSeq: number, limit: number): Promise<LoggedEvent[]> {
    return (
      await this.h.query("SELECT * FROM event_log WHERE run_id = $1 AND source_seq > $2 ORDER BY source_seq LIMIT $3", [
        runId,
        afterSourceSeq,
        limit,
      ])
    ).map(loggedFrom);
  }

  async countRedelivery(
    runId: string,
    connectionId: string,
    sourceEventId: string,
    envelope: string,
  ): Promise<Result<{ ackedSourceSeq: number }>> {
    return this.h.transaction(async (c): Promise<Result<{ ackedSourceSeq: number }>> => {
      const run = currentConnection(await this.h.lockRun(c, runId), runId, connectionId);
      if (!run.ok) return run;
      const [row] = (
        await c.query("SELECT envelope FROM committed_events WHERE run_id = $1 AND source_event_id = $2", [
          runId,
          sourceEventId,
        ])
      ).rows as Array<{ envelope: string }>;
      const refused = redeliveryRefusal(sourceEventId, row?.envelope, envelope);
      if (refused) return refused;
      await c.query(
        "UPDATE committed_events SET delivery_count = delivery_count + 1 WHERE run_id = $1 AND source_event_id = $2",
        [runId, sourceEventId],
      );
      await c.query("UPDATE runs SET replay_deliveries = replay_deliveries + 1 WHERE run_id = $1", [runId]);
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
    if (!items.some((item) => item.withinCommit)) return this.h.transaction((c) => this.appendBatch(c, items, nowMs));
    // Run rows are locked in runId order, so two instances' batches cannot deadlock; a run's items keep their order.
    const order = items
      .map((item, index) => ({ item, index }))
      .sort((a, b) => (a.item.runId < b.item.runId ? -1 : a.item.runId > b.item.runId ? 1 : a.index - b.index));
    return this.h.transaction(async (c) => {
      const results: Array<Result<{ ackedSourceSeq: number }>> = new Array(items.length);
      for (const { item, index } of order) results[index] = await this.commitItem(c, item, nowMs);
      return results;
    });
  }

  /**
   * A batch without host callbacks in four statements, however many events and runs it holds:
   * the run rows locked in runId order (two instances' batches cannot deadlock) with their
   * committed terminals; the window rows the batch's ids could repeat; then, once every item
   * is checked in item order on its run as the earlier items left it (`commitEvent`'s checks,
   * store-rules.ts), the window trimmed, and the accepted events appended to the run log and
   * the window with each cursor moved. A refused item writes nothing and the others commit.
   */
  private async appendBatch(
    c: pg.PoolClient,
    items: readonly BatchedEvent[],
    nowMs: number,
  ): Promise<Array<Result<{ ackedSourceSeq: number }>>> {
    const runIds = [...new Set(items.map((i) => i.runId))];
    const locked = (
      await c.query(
        `SELECT r.*, (SELECT MIN(source_seq) FROM committed_events e WHERE e.run_id = r.run_id AND e.event_type = 'run.terminal') AS terminal_seq
         FROM runs r WHERE r.run_id = ANY($1::text[]) ORDER BY r.run_id COLLATE "C" FOR UPDATE OF r`,
        [runIds],
      )
    ).rows as Row[];
    const runs = new Map<string, BatchRun>(
      locked.map((r) => [r.run_id as string, { row: r, terminal: r.terminal_seq as number | null }]),
    );
    const windowRows = (
      await c.query(
        "SELECT run_id, source_event_id, source_seq FROM committed_events WHERE (run_id, source_event_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
        [items.map((i) => i.runId), items.map((i) => i.event.sourceEventId)],
      )
    ).rows as Array<{ run_id: string; source_event_id: string; source_seq: number }>;
    // Where each id sits in its run's window; an id leaves the window once the cursor is 64 past it.
    const idSeq = new Map(windowRows.map((r) => [`${r.run_id}\n${r.source_event_id}`, r.source_seq]));
    const accepted: BatchedEvent[] = [];
    const results = items.map((item): Result<{ ackedSourceSeq: number }> => {
      const run = runs.get(item.runId);
      const refused = batchedAppendRefusal(run, item);
      if (refused) return refused;
      const e = item.event;
      const id = `${item.runId}\n${e.sourceEventId}`;
      const earlier = idSeq.get(id);
      if (earlier !== undefined && earlier > e.sourceSeq - 1 - COMMITTED_WINDOW)
        return fail("duplicate_mismatch", "/sourceEventId", `${e.sourceEventId} was committed under another sourceSeq`);
      idSeq.set(id, e.sourceSeq);
      runs.set(item.runId, appended(run!, e));
      accepted.push(item);
      return ok({ ackedSourceSeq: e.sourceSeq });
    });
    if (accepted.length === 0) return results;
    const moved = [...new Set(accepted.map((i) => i.runId))];
    const cursors = moved.map((runId) => runs.get(runId)!.row!.acked_source_seq as number);
    await c.query(
      "DELETE FROM committed_events w USING unnest($1::text[], $2::bigint[]) AS t(run_id, bound) WHERE w.run_id = t.run_id AND w.source_seq <= t.bound",
      [moved, cursors.map((seq) => seq - COMMITTED_WINDOW)],
    );
    const bound = new Map(moved.map((runId, i) => [runId, cursors[i]! - COMMITTED_WINDOW]));
    const windowed = accepted.filter((i) => i.event.sourceSeq > bound.get(i.runId)!);
    const columns = (xs: BatchedEvent[]) => [
      xs.map((i) => i.runId),
      xs.map((i) => i.event.sourceSeq),
      xs.map((i) => i.event.sourceEventId),
      xs.map((i) => i.event.eventType),
      xs.map((i) => i.event.priority),
      xs.map((i) => i.event.envelope),
    ];
    await c.query(
      `WITH logged AS (
         INSERT INTO event_log (run_id, source_seq, source_event_id, event_type, priority, envelope, committed_at)
         SELECT t.*, $1::bigint FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::int[], $7::text[]) AS t),
       windowed AS (
         INSERT INTO committed_events (run_id, source_seq, source_event_id, event_type, priority, envelope, delivery_count, committed_at)
         SELECT t.*, 1, $1::bigint FROM unnest($8::text[], $9::bigint[], $10::text[], $11::text[], $12::int[], $13::text[]) AS t)
       UPDATE runs SET acked_source_seq = t.acked FROM unnest($14::text[], $15::bigint[]) AS t(run_id, acked) WHERE runs.run_id = t.run_id`,
      [nowMs, ...columns(accepted), ...columns(windowed), moved, cursors],
    );
    return results;
  }

  /** One item of a batch in its own savepoint: a refusal or a host failure undoes this item only. */
  private async commitItem(
    c: pg.PoolClient,
    item: BatchedEvent,
    nowMs: number,
  ): Promise<Result<{ ackedSourceSeq: number }>> {
    await c.query("SAVEPOINT batched_event");
    let result = await this.appendEvent(c, item, nowMs);
    if (result.ok && item.withinCommit) {
      try {
        await item.withinCommit({ kind: "postgres", client: c });
      } catch (err) {
        result = callbackFailed(item.event.sourceEventId, err);
      }
    }
    if (!result.ok) await c.query("ROLLBACK TO SAVEPOINT batched_event");
    await c.query("RELEASE SAVEPOINT batched_event");
    return result;
  }

  /** The checks and writes of one committed event, on the locked run row. */
  private async appendEvent(
    c: pg.PoolClient,
    { runId, connectionId, event: e }: BatchedEvent,
    nowMs: number,
  ): Promise<Result<{ ackedSourceSeq: number }>> {
    const run = currentConnection(await this.h.lockRun(c, runId), runId, connectionId);
    if (!run.ok) return run;
    const refused = appendRefusal(
      e.sourceSeq,
      run.value.acked_source_seq as number,
      await this.h.terminalSourceSeq(c, runId),
    );
    if (refused) return refused;
    if (
      (
        await c.query("SELECT 1 FROM committed_events WHERE run_id = $1 AND source_event_id = $2", [
          runId,
          e.sourceEventId,
        ])
      ).rowCount
    ) {
      return fail("duplicate_mismatch", "/sourceEventId", `${e.sourceEventId} was committed under another sourceSeq`);
    }
    const row = [runId, e.sourceSeq, e.sourceEventId, e.eventType, e.priority, e.envelope, nowMs];
    await c.query(
      "INSERT INTO committed_events (run_id, source_seq, source_event_id, event_type, priority, envelope, committed_at, delivery_count) VALUES ($1, $2, $3, $4, $5, $6, $7, 1)",
      row,
    );
    await c.query(
      "INSERT INTO event_log (run_id, source_seq, source_event_id, event_type, priority, envelope, committed_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
      row,
    );
    await c.query("UPDATE runs SET acked_source_seq = $1 WHERE run_id = $2", [e.sourceSeq, runId]);
    await c.query("DELETE FROM committed_events WHERE run_id = $1 AND source_seq <= $2", [
      runId,
      e.sourceSeq - COMMITTED_WINDOW,
    ]);
    return ok({ ackedSourceSeq: e.sourceSeq });
  }
}
