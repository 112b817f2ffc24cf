import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { CredentialPlace } from "../sealed-credential.js";
import type { ServerKey } from "../server-key.js";
import { credentialFrom, sealedAuthKey, snapshotFrom, type Row } from "../store-rows.js";
import type { RunIdentity } from "../identity.js";
import type { CredentialRow, RunInit, RunSnapshot, StoreNotice } from "../store.js";

/** The channel every instance on the database listens on. */
export const CHANNEL = "prp_authority";
/** Retried whole: a deadlock or serialization failure between instances changed nothing. */
const RETRYABLE = new Set(["40001", "40P01"]);
const ATTEMPTS = 3;

/** A pg error's SQLSTATE, if it has one. */
const sqlState = (err: unknown): string | undefined =>
  typeof (err as { code?: unknown })?.code === "string" ? (err as { code: string }).code : undefined;

/**
 * The pool every part of the PostgreSQL store shares (runs, credentials, events, commands,
 * diagnostics, connections), with its transactions and the reads several parts make inside
 * theirs. A part is a small class over this handle: a new aggregate is a new part.
 */
export class PostgresHandle {
  /** Tells this instance's own notices from another's. */
  readonly origin = randomUUID();

  constructor(
    readonly pool: pg.Pool,
    /** The database named without its password: what errors and logs say. */
    readonly location: string,
    readonly serverKey: ServerKey,
  ) {}

  /**
   * One transaction on one pooled connection; `fn`'s refusals commit what it wrote (nothing, by
   * the rules), a throw rolls back. A deadlock or serialization failure is retried whole.
   */
  async transaction<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const c = await this.pool.connect();
      let broken: Error | undefined;
      // The server may end the session between two queries (a restart): that error belongs to
      // this call, which fails at its next query, not to the process.
      const lost = (err: Error): void => void (broken = err);
      c.on("error", lost);
      try {
        await c.query("BEGIN");
        const value = await fn(c);
        await c.query("COMMIT");
        return value;
      } catch (err) {
        await c.query("ROLLBACK").catch((rollback: Error) => (broken = rollback));
        if (attempt < ATTEMPTS && RETRYABLE.has(sqlState(err) ?? "")) continue;
        throw err;
      } finally {
        c.off("error", lost);
        c.release(broken);
      }
    }
  }
  async query(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.pool.query(sql, params)).rows as Row[];
  }
  /** A new run's row, unless the id is taken (then the caller reads what is stored); whether it was new. */
  async insertRun(c: pg.PoolClient, id: RunIdentity, init: RunInit): Promise<boolean> {
    const inserted = await c.query(
      `INSERT INTO runs (run_id, runner_instance_id, environment_lease_id, normalized_session_id, turn_id, item_id, protocol_version, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_id) DO NOTHING RETURNING run_id`,
      [
        id.runId,
        id.runnerInstanceId,
        id.environmentLeaseId,
        id.normalizedSessionId,
        id.turnId,
        id.itemId,
        init.protocolVersion,
        init.nowMs,
      ],
    );
    return inserted.rowCount === 1;
  }
  async lockRun(c: pg.PoolClient, runId: string): Promise<Row | undefined> {
    return (await c.query("SELECT * FROM runs WHERE run_id = $1 FOR UPDATE", [runId])).rows[0] as Row | undefined;
  }
  async notify(c: pg.PoolClient, notice: StoreNotice): Promise<void> {
    // Delivered to the listeners only when this transaction commits.
    await c.query("SELECT pg_notify($1, $2)", [CHANNEL, JSON.stringify({ origin: this.origin, ...notice })]);
  }
  seal(authKeyDigest: string, place: CredentialPlace): string {
    return sealedAuthKey(this.serverKey, authKeyDigest, place);
  }
  credentialOf(r: Row): CredentialRow {
    return credentialFrom(r, this.serverKey, this.location);
  }
  async terminalSourceSeq(c: pg.ClientBase | pg.Pool, runId: string): Promise<number | null> {
    const r = (
      await c.query(
        "SELECT MIN(source_seq) AS seq FROM committed_events WHERE run_id = $1 AND event_type = 'run.terminal'",
        [runId],
      )
    ).rows[0] as { seq: number | null };
    return r.seq;
  }
  async snapshot(c: pg.ClientBase | pg.Pool, r: Row): Promise<RunSnapshot> {
    const runId = r.run_id as string;
    const deliveries = (
      await c.query("SELECT command_id, delivery_count FROM commands WHERE run_id = $1 ORDER BY controller_seq", [
        runId,
      ])
    ).rows as Array<{ command_id: string; delivery_count: number }>;
    return snapshotFrom(r, await this.terminalSourceSeq(c, runId), deliveries);
  }
}
