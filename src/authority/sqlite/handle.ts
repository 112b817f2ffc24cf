import type Database from "better-sqlite3";
import { statementCache } from "../../storage/private-sqlite.js";
import { fail, type Result } from "../errors.js";
import type { CredentialPlace } from "../sealed-credential.js";
import type { ServerKey } from "../server-key.js";
import { credentialFrom, sealedAuthKey, snapshotFrom, type Row } from "../store-rows.js";
import { currentConnection } from "../store-rules.js";
import type { RunIdentity } from "../identity.js";
import type { CredentialRow, RunInit, RunSnapshot } from "../store.js";

/**
 * The one connection every part of the SQLite store shares (runs, credentials, events,
 * commands, diagnostics, connections), with its transactions and the reads that several parts
 * make inside theirs. A part is a small class over this handle: a new aggregate is a new part.
 */
export class SqliteHandle {
  readonly sql: (text: string) => Database.Statement;
  private readonly pageSize: number;
  /**
   * Settles when the transaction `commitEvents` holds open around the hosts' callbacks ends.
   * One connection serves every call, so meanwhile no other call may run on it: it would join
   * that transaction, and a reader would see rows a rollback then removes. Each caller waits
   * with `while (this.held !== null) await this.held;` and no await between the loop's exit
   * and its next step: an awaited helper would resume a microtask later, after another caller
   * may have opened a transaction.
   */
  held: Promise<void> | null = null;

  constructor(
    readonly db: Database.Database,
    readonly path: string,
    readonly maxStoreBytes: number,
    readonly serverKey: ServerKey,
  ) {
    this.sql = statementCache(db);
    this.pageSize = db.pragma("page_size", { simple: true }) as number;
  }

  async write<T>(fn: () => T): Promise<T> {
    while (this.held !== null) await this.held;
    // IMMEDIATE takes the write lock first, so a read-then-write never upgrades into SQLITE_BUSY.
    return this.db.transaction(fn).immediate();
  }

  async read<T>(fn: () => T): Promise<T> {
    while (this.held !== null) await this.held;
    return fn();
  }

  /**
   * A write transaction whose steps await (one code path for both databases): held, as
   * `commitEvents` holds it, so that no other call joins it meanwhile. A throw rolls back.
   */
  async writeAsync<T>(fn: () => Promise<T>): Promise<T> {
    while (this.held !== null) await this.held;
    let release = (): void => undefined;
    this.held = new Promise<void>((resolve) => (release = resolve));
    let committed = false;
    try {
      this.db.exec("BEGIN IMMEDIATE");
      const value = await fn();
      this.db.exec("COMMIT");
      committed = true;
      return value;
    } finally {
      if (!committed && this.db.inTransaction) this.db.exec("ROLLBACK");
      this.held = null;
      release();
    }
  }

  /** A read whose steps await: held too, so that a write cannot interleave between them. */
  async readAsync<T>(fn: () => Promise<T>): Promise<T> {
    while (this.held !== null) await this.held;
    let release = (): void => undefined;
    this.held = new Promise<void>((resolve) => (release = resolve));
    try {
      return await fn();
    } finally {
      this.held = null;
      release();
    }
  }

  /** Growth past the size bound is refused at write time, before it would be refused at open. */
  wouldExceed(extraBytes: number): boolean {
    // A cached statement: db.pragma() prepares one per call, and this runs once per event.
    const pages = this.sql("PRAGMA page_count").pluck().get() as number;
    return pages * this.pageSize + extraBytes > this.maxStoreBytes;
  }

  /** A new run's row (the caller checked the identity and that the id is new). */
  insertRun(id: RunIdentity, init: RunInit): void {
    this.sql(
      "INSERT INTO runs (run_id, runner_instance_id, environment_lease_id, normalized_session_id, turn_id, item_id, protocol_version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    ).run(
      id.runId,
      id.runnerInstanceId,
      id.environmentLeaseId,
      id.normalizedSessionId,
      id.turnId,
      id.itemId,
      init.protocolVersion,
      init.nowMs,
    );
  }

  runRow(runId: string): Row | undefined {
    return this.sql("SELECT * FROM runs WHERE run_id = ?").get(runId) as Row | undefined;
  }

  /**
   * The committed run.terminal's sourceSeq, or null. Nothing is committed after a terminal, so
   * it stays the newest row of the window and the window alone remembers it.
   */
  terminalSourceSeq(runId: string): number | null {
    const row = this.sql(
      "SELECT MIN(source_seq) AS seq FROM committed_events WHERE run_id = ? AND event_type = 'run.terminal'",
    ).get(runId) as { seq: number | null };
    return row.seq;
  }

  /** The run row, if `connectionId` is its one current connection. */
  currentRun(runId: string, connectionId: string): Result<Row> {
    return currentConnection(this.runRow(runId), runId, connectionId);
  }

  snapshot(r: Row): RunSnapshot {
    const deliveries = this.sql(
      "SELECT command_id, delivery_count FROM commands WHERE run_id = ? ORDER BY controller_seq",
    ).all(r.run_id) as Array<{ command_id: string; delivery_count: number }>;
    return snapshotFrom(r, this.terminalSourceSeq(r.run_id as string), deliveries);
  }

  seal(authKeyDigest: string, place: CredentialPlace): string {
    return sealedAuthKey(this.serverKey, authKeyDigest, place);
  }

  credentialOf(r: Row): CredentialRow {
    return credentialFrom(r, this.serverKey, this.path);
  }

  storeFull(): Result<never> {
    return fail("store_full", "", `the store would pass its ${this.maxStoreBytes}-byte bound`);
  }
}
