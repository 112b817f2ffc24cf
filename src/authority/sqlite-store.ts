import { join } from "node:path";
import type Database from "better-sqlite3";
import { openPrivateDatabase, statementCache, StateError } from "../storage/private-sqlite.js";
import { fail, ok, type Result } from "./errors.js";
import { cutText } from "../contract/text-cut.js";
import { checkIdentity, identityDifference, IDENTITY_PATTERN, type RunIdentity } from "./identity.js";
import { opensServerKeyCheck, serverKeyCheck, type CredentialPlace } from "./sealed-credential.js";
import { ServerKey } from "./server-key.js";
import {
  COMMITTED_WINDOW,
  MAX_COMMAND_BYTES,
  MAX_COMMANDS,
  MAX_DIAGNOSTIC_CODE,
  MAX_DIAGNOSTIC_MESSAGE,
  MAX_DIAGNOSTICS,
  MAX_RUNNER_CONNECTIONS,
  MAX_STORE_BYTES,
  RESULT_STATUSES,
  STORE_FILE,
  STORE_SCHEMA,
} from "./limits.js";
import {
  appendCommandRefusal,
  appended,
  batchedAppendRefusal,
  callbackFailed,
  commandResultDecision,
  currentConnection,
  nextRevocationEpoch,
  reauthorizeRefusal,
  redeliveryRefusal,
  renewalDecision,
  type BatchRun,
} from "./store-rules.js";
import {
  commandFrom,
  credentialFrom,
  cursorFrom,
  eventFrom,
  identityFrom,
  loggedFrom,
  runnerConnectionFrom,
  sealedAuthKey,
  snapshotFrom,
  type Row,
} from "./store-rows.js";
import type {
  AuthorityStore,
  BatchedEvent,
  CommandRow,
  CommittedEventRow,
  CredentialRow,
  Diagnostic,
  LeaseRenewal,
  LoggedEvent,
  NewCommand,
  NewCommandResult,
  NewCommittedEvent,
  NewTicket,
  Reauthorized,
  ReauthorizeRequest,
  RenewLeaseRequest,
  Revocation,
  RunCursor,
  RunInit,
  RunnerConnection,
  RunSnapshot,
  WithinCommit,
} from "./store.js";

const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  runner_instance_id TEXT NOT NULL, environment_lease_id TEXT NOT NULL, normalized_session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL, item_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  acked_source_seq INTEGER NOT NULL DEFAULT 0,
  connection_count INTEGER NOT NULL DEFAULT 0,
  current_connection_id TEXT,
  revocation_epoch INTEGER NOT NULL DEFAULT 0,
  replay_deliveries INTEGER NOT NULL DEFAULT 0,
  duplicate_command_results INTEGER NOT NULL DEFAULT 0,
  fresh_bootstraps INTEGER NOT NULL DEFAULT 0,
  malformed_frames INTEGER NOT NULL DEFAULT 0,
  last_lease_id TEXT,
  last_lease_expires_at INTEGER,
  created_at INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS credentials (
  credential_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('bootstrap', 'lease')),
  auth_key_digest TEXT NOT NULL, -- sealed:v1:…, the auth key sealed under the server key (sealed-credential.ts)
  issued_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
  used_at INTEGER, revoked_at INTEGER,
  lease_id TEXT UNIQUE,
  revocation_epoch INTEGER NOT NULL,
  protocol_version INTEGER) STRICT;
CREATE INDEX IF NOT EXISTS credentials_by_run ON credentials (run_id);
CREATE TABLE IF NOT EXISTS lease_renewals (
  credential_id TEXT PRIMARY KEY REFERENCES credentials (credential_id) ON DELETE CASCADE,
  previous_expires_at INTEGER NOT NULL,
  renewals INTEGER NOT NULL,
  renewed_at INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS commands (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  controller_seq INTEGER NOT NULL, command_id TEXT NOT NULL, command_type TEXT NOT NULL,
  payload TEXT NOT NULL, envelope TEXT NOT NULL, queued_at INTEGER NOT NULL,
  delivery_count INTEGER NOT NULL DEFAULT 0, last_delivered_connection_id TEXT, last_delivered_at INTEGER,
  status TEXT, result TEXT, result_at INTEGER,
  PRIMARY KEY (run_id, controller_seq), UNIQUE (run_id, command_id)) STRICT;
CREATE TABLE IF NOT EXISTS committed_events (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  source_seq INTEGER NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  priority INTEGER NOT NULL, envelope TEXT NOT NULL, delivery_count INTEGER NOT NULL, committed_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, source_seq), UNIQUE (run_id, source_event_id)) STRICT;
CREATE TABLE IF NOT EXISTS event_log (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  source_seq INTEGER NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  priority INTEGER NOT NULL, envelope TEXT NOT NULL, committed_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, source_seq)) STRICT;
CREATE TABLE IF NOT EXISTS diagnostics (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  code TEXT NOT NULL, message TEXT NOT NULL, at INTEGER NOT NULL) STRICT;
CREATE INDEX IF NOT EXISTS diagnostics_by_run ON diagnostics (run_id, id);
CREATE TABLE IF NOT EXISTS runner_connections (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  connection_number INTEGER NOT NULL,
  connected_at INTEGER NOT NULL,
  protocol_version INTEGER NOT NULL,
  runner_version TEXT, runner_digest TEXT, contract_digest TEXT,
  PRIMARY KEY (run_id, connection_number)) STRICT;
CREATE TABLE IF NOT EXISTS auth_failures (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  code TEXT NOT NULL,
  count INTEGER NOT NULL,
  first_id INTEGER NOT NULL, latest_id INTEGER NOT NULL,
  PRIMARY KEY (run_id, code)) STRICT;
`;

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The diagnostics a run's auth-failure tallies keep (the run is the parameter @run). */
const AUTH_FAILURE_IDS =
  "SELECT first_id FROM auth_failures WHERE run_id = @run UNION SELECT latest_id FROM auth_failures WHERE run_id = @run";

export interface SqliteStoreOptions {
  /** Seals every stored auth key; kept outside the database (server-key-source.ts). */
  serverKey: ServerKey;
  /**
   * When the store's credentials do not open under `serverKey` (they were sealed under another
   * key, or left unsealed by an earlier version): delete them all and adopt this key, instead
   * of refusing to open. Every runner then needs a fresh ticket. For a key change, once.
   */
  adoptServerKey?: boolean;
  /** The size bound of the main file; 192 MiB (§6.2). Smaller only to test the bound. */
  maxStoreBytes?: number;
}

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

/**
 * The authority's durable store on SQLite (runtime.md §6.2, D7): one private database file in
 * the state directory (0700 directory, 0600 files, symlinks refused, WAL with
 * synchronous=FULL), ≤192 MiB, one transaction per change. Many runs share the file; every
 * row is keyed by runId. The database is checked against its invariants whenever it is opened
 * and refused (StateError) when any fails: among them, the server key must be the one its
 * credentials are sealed under, and each credential's key must open in its own row.
 */
export class SqliteAuthorityStore implements AuthorityStore {
  private readonly pageSize: number;

  private readonly sql: (text: string) => Database.Statement;
  /**
   * Settles when the transaction `commitEvents` holds open around the hosts' callbacks ends.
   * One connection serves every call, so meanwhile no other call may run on it: it would join
   * that transaction, and a reader would see rows a rollback then removes. Each caller waits
   * with `while (this.open !== null) await this.open;` and no await between the loop's exit
   * and its next step: an awaited helper would resume a microtask later, after another caller
   * may have opened a transaction.
   */
  private open: Promise<void> | null = null;

  private constructor(
    private readonly db: Database.Database,
    readonly path: string,
    private readonly maxStoreBytes: number,
    private readonly serverKey: ServerKey,
  ) {
    this.sql = statementCache(db);
    this.pageSize = db.pragma("page_size", { simple: true }) as number;
  }

  static open(stateDirectory: string, options: SqliteStoreOptions): SqliteAuthorityStore {
    const path = join(stateDirectory, STORE_FILE);
    // Fail closed for a caller the types did not reach: no key, no store.
    if (!(options?.serverKey instanceof ServerKey))
      throw new StateError(
        "server_key_missing",
        path,
        "the store needs the server key its credentials are sealed under (the serverKey option)",
      );
    const maxStoreBytes = options.maxStoreBytes ?? MAX_STORE_BYTES;
    const db = openPrivateDatabase(path, { maxFileBytes: maxStoreBytes });
    try {
      const store = new SqliteAuthorityStore(db, path, maxStoreBytes, options.serverKey);
      // IMMEDIATE: two processes opening one new file must not both write the marker.
      db.transaction(() => store.initialise(options.adoptServerKey === true)).immediate();
      return store;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  private initialise(adoptServerKey: boolean): void {
    this.db.exec(SCHEMA_SQL);
    const marker = this.sql("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | undefined;
    if (!marker) {
      this.sql("INSERT INTO meta (key, value) VALUES ('schema', ?)").run(STORE_SCHEMA);
      this.sql("INSERT INTO meta (key, value) VALUES ('server_key_check', ?)").run(serverKeyCheck(this.serverKey));
      return;
    }
    if (marker.value !== STORE_SCHEMA)
      throw new StateError(
        "state_unknown_schema",
        this.path,
        `the store records schema ${marker.value}, not ${STORE_SCHEMA}`,
      );
    this.checkServerKey(adoptServerKey);
    this.checkInvariants();
  }

  /**
   * The server key must be the one the store's credentials are sealed under, and no credential
   * may be unsealed (an earlier version stored each auth key as itself). Unsealed keys are not
   * sealed now: they may already have been read from the file, so they are refused, or, with
   * `adoptServerKey`, deleted with every other credential.
   */
  private checkServerKey(adopt: boolean): void {
    const check = this.sql("SELECT value FROM meta WHERE key = 'server_key_check'").get() as
      { value: string } | undefined;
    const unsealed = (
      this.sql("SELECT COUNT(*) AS n FROM credentials WHERE auth_key_digest LIKE 'sha256:%'").get() as { n: number }
    ).n;
    const wrongKey = check !== undefined && !opensServerKeyCheck(this.serverKey, check.value);
    if (!wrongKey && unsealed === 0) {
      if (!check)
        this.sql("INSERT INTO meta (key, value) VALUES ('server_key_check', ?)").run(serverKeyCheck(this.serverKey));
      return;
    }
    if (!adopt) {
      if (wrongKey)
        throw new StateError(
          "state_server_key_mismatch",
          this.path,
          "the server key is not the one this store's credentials are sealed under: give the authority the key it was opened with before; to change the key, open it once with adoptServerKey, which deletes every ticket and lease (runners need a fresh ticket)",
        );
      throw new StateError(
        "state_credentials_unsealed",
        this.path,
        `${unsealed} credential(s) were stored unsealed by an earlier version, and anyone who read this file could use them: open it once with adoptServerKey to delete every ticket and lease (runners need a fresh ticket)`,
      );
    }
    this.sql("DELETE FROM credentials").run();
    this.sql(
      "INSERT INTO meta (key, value) VALUES ('server_key_check', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ).run(serverKeyCheck(this.serverKey));
  }

  private seal(authKeyDigest: string, place: CredentialPlace): string {
    return sealedAuthKey(this.serverKey, authKeyDigest, place);
  }

  private credentialOf(r: Row): CredentialRow {
    return credentialFrom(r, this.serverKey, this.path);
  }

  /** What must hold of a store written only by this code; anything else is refused at open. */
  private checkInvariants(): void {
    const refuse = (code: string, message: string): never => {
      throw new StateError(code, this.path, message);
    };
    for (const r of this.sql("SELECT * FROM runs").all() as Row[]) {
      const identity = identityFrom(r);
      const checked = checkIdentity(identity);
      if (!checked.ok) refuse("state_identity_invalid", `run ${JSON.stringify(r.run_id)}: ${checked.error.message}`);
      const runId = identity.runId;
      const acked = r.acked_source_seq as number;
      if (!(acked >= 0 && (r.revocation_epoch as number) >= 0 && (r.connection_count as number) >= 0))
        refuse("state_counters_invalid", `run ${runId}: negative cursor or counter`);
      const seqs = this.sql(
        "SELECT controller_seq, status, result, length(CAST(envelope AS BLOB)) AS bytes FROM commands WHERE run_id = ? ORDER BY controller_seq",
      ).all(runId) as Row[];
      if (seqs.length > MAX_COMMANDS)
        refuse("state_commands_invalid", `run ${runId} holds ${seqs.length} commands; the bound is ${MAX_COMMANDS}`);
      seqs.forEach((c, i) => {
        if (c.controller_seq !== i + 1)
          refuse(
            "state_commands_invalid",
            `run ${runId}: command at position ${i + 1} has controllerSeq ${String(c.controller_seq)}`,
          );
        if (c.status !== null && !(RESULT_STATUSES as readonly unknown[]).includes(c.status))
          refuse("state_commands_invalid", `run ${runId}: command ${i + 1} has status ${String(c.status)}`);
        if ((c.status === null) !== (c.result === null))
          refuse(
            "state_commands_invalid",
            `run ${runId}: command ${i + 1} has a status without a result or a result without a status`,
          );
        if ((c.bytes as number) > MAX_COMMAND_BYTES)
          refuse("state_commands_invalid", `run ${runId}: command ${i + 1} is over ${MAX_COMMAND_BYTES} bytes`);
      });
      const window = this.sql("SELECT source_seq FROM committed_events WHERE run_id = ?").all(runId) as Array<{
        source_seq: number;
      }>;
      if (window.length > COMMITTED_WINDOW)
        refuse(
          "state_window_invalid",
          `run ${runId} holds ${window.length} committed events; the window is ${COMMITTED_WINDOW}`,
        );
      for (const w of window) {
        if (!(w.source_seq <= acked && w.source_seq > acked - COMMITTED_WINDOW))
          refuse(
            "state_window_invalid",
            `run ${runId}: committed event ${w.source_seq} is outside (${acked - COMMITTED_WINDOW}, ${acked}]`,
          );
      }
      const terminal = this.terminalSourceSeq(runId);
      if (terminal !== null && terminal !== acked)
        refuse(
          "state_window_invalid",
          `run ${runId}: events are committed after its run.terminal (sourceSeq ${terminal}, cursor ${acked})`,
        );
      const logged = (
        this.sql("SELECT MAX(source_seq) AS seq FROM event_log WHERE run_id = ?").get(runId) as { seq: number | null }
      ).seq;
      if (logged !== null && logged !== acked)
        refuse("state_log_invalid", `run ${runId}: the run log ends at sourceSeq ${logged}, the cursor is ${acked}`);
    }
    for (const c of this.sql("SELECT * FROM credentials").all() as Row[]) {
      if (!DIGEST.test(c.credential_id as string))
        refuse("state_credential_invalid", "a credential record's locator is not a sha256 digest");
      const row = this.credentialOf(c);
      if (
        row.kind === "lease" &&
        (row.leaseId === null || !IDENTITY_PATTERN.test(row.leaseId) || row.protocolVersion === null)
      )
        refuse("state_credential_invalid", "a lease record has no lease id or protocol version");
    }
    const tallies = this.sql(
      `SELECT a.count, a.first_id, a.latest_id, f.id AS first_found, l.id AS latest_found FROM auth_failures a
      LEFT JOIN diagnostics f ON f.id = a.first_id AND f.run_id = a.run_id AND f.code = a.code
      LEFT JOIN diagnostics l ON l.id = a.latest_id AND l.run_id = a.run_id AND l.code = a.code`,
    ).all() as Row[];
    for (const t of tallies) {
      const consistent =
        (t.count as number) >= 1 &&
        ((t.count as number) === 1) === (t.first_id === t.latest_id) &&
        t.first_found !== null &&
        t.latest_found !== null;
      if (!consistent)
        refuse("state_diagnostics_invalid", "an auth-failure tally does not fit the diagnostics it keeps");
    }
    for (const r of this.sql(
      "SELECT r.previous_expires_at, r.renewals, c.kind, c.expires_at FROM lease_renewals r LEFT JOIN credentials c USING (credential_id)",
    ).all() as Row[]) {
      if (
        r.kind !== "lease" ||
        (r.renewals as number) < 1 ||
        (r.previous_expires_at as number) > (r.expires_at as number)
      )
        refuse("state_credential_invalid", "a lease renewal record does not fit a lease");
    }
  }

  /** Growth past the size bound is refused at write time, before it would be refused at open. */
  private wouldExceed(extraBytes: number): boolean {
    // A cached statement: db.pragma() prepares one per call, and this runs once per event.
    const pages = this.sql("PRAGMA page_count").pluck().get() as number;
    return pages * this.pageSize + extraBytes > this.maxStoreBytes;
  }

  private async write<T>(fn: () => T): Promise<T> {
    while (this.open !== null) await this.open;
    // IMMEDIATE takes the write lock first, so a read-then-write never upgrades into SQLITE_BUSY.
    return this.db.transaction(fn).immediate();
  }

  private async read<T>(fn: () => T): Promise<T> {
    while (this.open !== null) await this.open;
    return fn();
  }

  private runRow(runId: string): Row | undefined {
    return this.sql("SELECT * FROM runs WHERE run_id = ?").get(runId) as Row | undefined;
  }

  /**
   * The committed run.terminal's sourceSeq, or null. Nothing is committed after a terminal, so
   * it stays the newest row of the window and the window alone remembers it.
   */
  private terminalSourceSeq(runId: string): number | null {
    const row = this.sql(
      "SELECT MIN(source_seq) AS seq FROM committed_events WHERE run_id = ? AND event_type = 'run.terminal'",
    ).get(runId) as { seq: number | null };
    return row.seq;
  }

  /** The run row, if `connectionId` is its one current connection. */
  private currentRun(runId: string, connectionId: string): Result<Row> {
    return currentConnection(this.runRow(runId), runId, connectionId);
  }

  private snapshot(r: Row): RunSnapshot {
    const deliveries = this.sql(
      "SELECT command_id, delivery_count FROM commands WHERE run_id = ? ORDER BY controller_seq",
    ).all(r.run_id) as Array<{ command_id: string; delivery_count: number }>;
    return snapshotFrom(r, this.terminalSourceSeq(r.run_id as string), deliveries);
  }

  async registerRun(identity: RunIdentity, init: RunInit): Promise<Result<RunSnapshot>> {
    const checked = checkIdentity(identity);
    if (!checked.ok) return checked;
    const id = checked.value;
    return this.write(() => {
      const existing = this.runRow(id.runId);
      if (existing) {
        const differs = identityDifference(identityFrom(existing), id);
        if (differs)
          return fail("run_identity_mismatch", `/${differs}`, `run ${id.runId} is stored with another ${differs}`);
        return ok(this.snapshot(existing));
      }
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
      return ok(this.snapshot(this.runRow(id.runId)!));
    });
  }

  run(runId: string): Promise<RunSnapshot | undefined> {
    return this.read(() => {
      const r = this.runRow(runId);
      return r ? this.snapshot(r) : undefined;
    });
  }

  runCursor(runId: string): Promise<RunCursor | undefined> {
    return this.read(() => {
      const r = this.runRow(runId);
      return r ? cursorFrom(r, this.terminalSourceSeq(runId)) : undefined;
    });
  }

  runIds(): Promise<string[]> {
    return this.read(() =>
      (this.sql("SELECT run_id FROM runs ORDER BY run_id").all() as Array<{ run_id: string }>).map((r) => r.run_id),
    );
  }

  async insertTicket(t: NewTicket): Promise<Result<void>> {
    return this.write(() => {
      const run = this.runRow(t.runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${t.runId}`);
      this.sql(
        "INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, revocation_epoch) VALUES (?, ?, 'bootstrap', ?, ?, ?, ?)",
      ).run(
        t.credentialId,
        t.runId,
        this.seal(t.authKeyDigest, { credentialId: t.credentialId, runId: t.runId, kind: "bootstrap" }),
        t.issuedAtUnixMs,
        t.expiresAtUnixMs,
        run.revocation_epoch,
      );
      return ok(undefined);
    });
  }

  credential(credentialId: string): Promise<CredentialRow | undefined> {
    return this.read(() => {
      const r = this.sql("SELECT * FROM credentials WHERE credential_id = ?").get(credentialId) as Row | undefined;
      return r ? this.credentialOf(r) : undefined;
    });
  }

  async reauthorize(req: ReauthorizeRequest): Promise<Result<Reauthorized>> {
    return this.write((): Result<Reauthorized> => {
      const stored = this.sql("SELECT * FROM credentials WHERE credential_id = ?").get(req.expected.credentialId) as
        Row | undefined;
      if (!stored) return fail("unknown_credential", "/credentialId", "the credential is gone");
      const current = this.credentialOf(stored);
      const refused = reauthorizeRefusal(current, req);
      if (refused) return refused;
      const run = this.runRow(current.runId)!;
      let lease: CredentialRow;
      if (current.kind === "bootstrap" && req.mint) {
        this.sql("UPDATE credentials SET used_at = ? WHERE credential_id = ?").run(req.nowMs, current.credentialId);
        this.sql(
          "INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, lease_id, revocation_epoch, protocol_version) VALUES (?, ?, 'lease', ?, ?, ?, ?, ?, ?)",
        ).run(
          req.mint.credentialId,
          current.runId,
          this.seal(req.mint.authKeyDigest, {
            credentialId: req.mint.credentialId,
            runId: current.runId,
            kind: "lease",
          }),
          req.nowMs,
          req.mint.expiresAtUnixMs,
          req.mint.leaseId,
          run.revocation_epoch,
          req.selectedVersion,
        );
        lease = this.credentialOf(
          this.sql("SELECT * FROM credentials WHERE credential_id = ?").get(req.mint.credentialId) as Row,
        );
      } else {
        lease = current;
      }
      const n = (run.connection_count as number) + 1;
      const connectionId = `connection_${n}`;
      this.sql(
        `UPDATE runs SET connection_count = ?, current_connection_id = ?, protocol_version = ?, last_lease_id = ?, last_lease_expires_at = ?,
           fresh_bootstraps = fresh_bootstraps + ? WHERE run_id = ?`,
      ).run(
        n,
        connectionId,
        req.selectedVersion,
        lease.leaseId,
        lease.expiresAtUnixMs,
        current.kind === "bootstrap" ? 1 : 0,
        current.runId,
      );
      this.sql(
        "INSERT INTO runner_connections (run_id, connection_number, connected_at, protocol_version, runner_version, runner_digest, contract_digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ).run(
        current.runId,
        n,
        req.nowMs,
        req.selectedVersion,
        req.runner?.runnerVersion ?? null,
        req.runner?.runnerDigest ?? null,
        req.runner?.contractDigest ?? null,
      );
      this.sql("DELETE FROM runner_connections WHERE run_id = ? AND connection_number <= ?").run(
        current.runId,
        n - MAX_RUNNER_CONNECTIONS,
      );
      return ok({
        connectionId,
        lease,
        freshBootstrap: current.kind === "bootstrap",
        ackedSourceSeq: run.acked_source_seq as number,
      });
    });
  }

  async revoke(runId: string, epoch: number | undefined, nowMs: number): Promise<Result<Revocation>> {
    return this.write((): Result<Revocation> => {
      const run = this.runRow(runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${runId}`);
      const raised = nextRevocationEpoch(run.revocation_epoch as number, epoch);
      if (!raised.ok) return raised;
      const next = raised.value;
      this.sql("UPDATE runs SET revocation_epoch = ? WHERE run_id = ?").run(next, runId);
      const revoked = this.sql(
        "UPDATE credentials SET revoked_at = ? WHERE run_id = ? AND revoked_at IS NULL AND used_at IS NULL AND revocation_epoch < ?",
      ).run(nowMs, runId, next).changes;
      return ok({ revocationEpoch: next, revokedCredentials: revoked });
    });
  }

  async renewLease(req: RenewLeaseRequest): Promise<Result<LeaseRenewal>> {
    return this.write((): Result<LeaseRenewal> => {
      const run = this.runRow(req.runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${req.runId}`);
      const stored = this.sql("SELECT * FROM credentials WHERE lease_id = ? AND run_id = ? AND kind = 'lease'").get(
        req.leaseId,
        req.runId,
      ) as Row | undefined;
      const lease = stored ? this.credentialOf(stored) : undefined;
      const renewal = lease
        ? (this.sql("SELECT * FROM lease_renewals WHERE credential_id = ?").get(lease.credentialId) as Row | undefined)
        : undefined;
      const decided = renewalDecision(req, run, lease, renewal);
      if (!decided.ok || decided.value.replayed || !lease) return decided;
      const { expiresAtUnixMs } = decided.value;
      this.sql("UPDATE credentials SET expires_at = ? WHERE credential_id = ?").run(
        expiresAtUnixMs,
        lease.credentialId,
      );
      this.sql(
        `INSERT INTO lease_renewals (credential_id, previous_expires_at, renewals, renewed_at) VALUES (?, ?, 1, ?)
         ON CONFLICT (credential_id) DO UPDATE SET previous_expires_at = excluded.previous_expires_at, renewals = renewals + 1, renewed_at = excluded.renewed_at`,
      ).run(lease.credentialId, lease.expiresAtUnixMs, req.nowMs);
      this.sql("UPDATE runs SET last_lease_expires_at = ? WHERE run_id = ?").run(expiresAtUnixMs, req.runId);
      return decided;
    });
  }

  async prune(nowMs: number): Promise<number> {
    return this.write(
      () =>
        this.sql("DELETE FROM credentials WHERE used_at IS NOT NULL OR revoked_at IS NOT NULL OR expires_at <= ?").run(
          nowMs,
        ).changes,
    );
  }

  committedEvent(runId: string, sourceEventId: string): Promise<CommittedEventRow | undefined> {
    return this.read(() => {
      const r = this.sql("SELECT * FROM committed_events WHERE run_id = ? AND source_event_id = ?").get(
        runId,
        sourceEventId,
      ) as Row | undefined;
      return r ? eventFrom(r) : undefined;
    });
  }

  committedWindow(runId: string): Promise<CommittedEventRow[]> {
    return this.read(() =>
      (this.sql("SELECT * FROM committed_events WHERE run_id = ? ORDER BY source_seq").all(runId) as Row[]).map(
        eventFrom,
      ),
    );
  }

  eventLog(runId: string, afterSourceSeq: number, limit: number): Promise<LoggedEvent[]> {
    return this.read(() =>
      (
        this.sql("SELECT * FROM event_log WHERE run_id = ? AND source_seq > ? ORDER BY source_seq LIMIT ?").all(
          runId,
          afterSourceSeq,
          limit,
        ) as Row[]
      ).map(loggedFrom),
    );
  }

  async countRedelivery(
    runId: string,
    connectionId: string,
    sourceEventId: string,
    envelope: string,
  ): Promise<Result<{ ackedSourceSeq: number }>> {
    return this.write((): Result<{ ackedSourceSeq: number }> => {
      const run = this.currentRun(runId, connectionId);
      if (!run.ok) return run;
      const row = this.sql("SELECT envelope FROM committed_events WHERE run_id = ? AND source_event_id = ?").get(
        runId,
        sourceEventId,
      ) as { envelope: string } | undefined;
      const refused = redeliveryRefusal(sourceEventId, row?.envelope, envelope);
      if (refused) return refused;
      this.sql(
        "UPDATE committed_events SET delivery_count = delivery_count + 1 WHERE run_id = ? AND source_event_id = ?",
      ).run(runId, sourceEventId);
      this.sql("UPDATE runs SET replay_deliveries = replay_deliveries + 1 WHERE run_id = ?").run(runId);
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
    while (this.open !== null) await this.open;
    let release = (): void => undefined;
    this.open = new Promise((resolve) => (release = resolve));
    let committed = false;
    try {
      this.db.exec("BEGIN IMMEDIATE");
      const batch: Batch = { runs: new Map(), moved: new Set() };
      const results: Array<Result<{ ackedSourceSeq: number }>> = [];
      for (const item of items)
        results.push(
          item.withinCommit
            ? await this.commitHosted(item, item.withinCommit, nowMs, batch)
            : this.appendEvent(item, nowMs, batch),
        );
      for (const runId of batch.moved) this.writeCursor(runId, batch);
      this.db.exec("COMMIT");
      committed = true;
      return results;
    } finally {
      if (!committed && this.db.inTransaction) this.db.exec("ROLLBACK");
      this.open = null;
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
    this.db.exec("SAVEPOINT batched_event");
    let result = this.appendEvent(item, nowMs, batch);
    if (result.ok) {
      try {
        this.writeCursor(item.runId, batch);
        await withinCommit({ kind: "sqlite", db: this.db });
      } catch (err) {
        result = callbackFailed(item.event.sourceEventId, err);
        batch.runs.delete(item.runId); // its run row is read again after the rollback
      }
    }
    // A host error that ended the whole transaction makes ROLLBACK TO throw: the batch fails.
    if (!result.ok) this.db.exec("ROLLBACK TO batched_event");
    this.db.exec("RELEASE batched_event");
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
      const row = this.runRow(runId);
      run = { row, terminal: row ? this.terminalSourceSeq(runId) : null };
      if (row) runs.set(runId, run);
    }
    const refused = batchedAppendRefusal(run, item);
    if (refused) return refused;
    const acked = run.row!.acked_source_seq as number;
    const sameId = this.sql("SELECT source_seq FROM committed_events WHERE run_id = ? AND source_event_id = ?")
      .pluck()
      .get(runId, e.sourceEventId) as number | undefined;
    if (sameId !== undefined) {
      if (sameId > acked - COMMITTED_WINDOW)
        return fail("duplicate_mismatch", "/sourceEventId", `${e.sourceEventId} was committed under another sourceSeq`);
      this.trimWindow(runId, acked); // a row this batch has not trimmed yet: the id has left the window
    }
    if (this.wouldExceed(Buffer.byteLength(e.envelope)))
      return fail("store_full", "", `the store would pass its ${this.maxStoreBytes}-byte bound`);
    this.sql(
      "INSERT INTO committed_events (run_id, source_seq, source_event_id, event_type, priority, envelope, delivery_count, committed_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
    ).run(runId, e.sourceSeq, e.sourceEventId, e.eventType, e.priority, e.envelope, nowMs);
    this.sql(
      "INSERT INTO event_log (run_id, source_seq, source_event_id, event_type, priority, envelope, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ).run(runId, e.sourceSeq, e.sourceEventId, e.eventType, e.priority, e.envelope, nowMs);
    runs.set(runId, appended(run, e));
    moved.add(runId);
    return ok({ ackedSourceSeq: e.sourceSeq });
  }

  /** The run's cursor as the batch moved it, and its window trimmed to match. */
  private writeCursor(runId: string, { runs, moved }: Batch): void {
    const acked = runs.get(runId)!.row!.acked_source_seq as number;
    this.sql("UPDATE runs SET acked_source_seq = ? WHERE run_id = ?").run(acked, runId);
    this.trimWindow(runId, acked);
    moved.delete(runId);
  }

  /** The committed window of a run whose cursor is `acked`: its newest COMMITTED_WINDOW events. */
  private trimWindow(runId: string, acked: number): void {
    this.sql("DELETE FROM committed_events WHERE run_id = ? AND source_seq <= ?").run(runId, acked - COMMITTED_WINDOW);
  }

  command(runId: string, commandId: string): Promise<CommandRow | undefined> {
    return this.read(() => {
      const r = this.sql("SELECT * FROM commands WHERE run_id = ? AND command_id = ?").get(runId, commandId) as
        Row | undefined;
      return r ? commandFrom(r) : undefined;
    });
  }

  commands(runId: string): Promise<CommandRow[]> {
    return this.read(() =>
      (this.sql("SELECT * FROM commands WHERE run_id = ? ORDER BY controller_seq").all(runId) as Row[]).map(
        commandFrom,
      ),
    );
  }

  async appendCommand(runId: string, c: NewCommand, nowMs: number): Promise<Result<CommandRow>> {
    return this.write((): Result<CommandRow> => {
      if (!this.runRow(runId)) return fail("unknown_run", "/runId", `no run ${runId}`);
      const count = (this.sql("SELECT COUNT(*) AS n FROM commands WHERE run_id = ?").get(runId) as { n: number }).n;
      const refused = appendCommandRefusal(runId, count, c.controllerSeq);
      if (refused) return refused;
      if (this.sql("SELECT 1 FROM commands WHERE run_id = ? AND command_id = ?").get(runId, c.commandId))
        return fail("command_conflict", "/commandId", `${c.commandId} is already queued`);
      if (this.wouldExceed(Buffer.byteLength(c.envelope) + Buffer.byteLength(c.payload)))
        return fail("store_full", "", `the store would pass its ${this.maxStoreBytes}-byte bound`);
      this.sql(
        "INSERT INTO commands (run_id, controller_seq, command_id, command_type, payload, envelope, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ).run(runId, c.controllerSeq, c.commandId, c.type, c.payload, c.envelope, nowMs);
      return ok(
        commandFrom(
          this.sql("SELECT * FROM commands WHERE run_id = ? AND controller_seq = ?").get(runId, c.controllerSeq) as Row,
        ),
      );
    });
  }

  async deliverNextCommand(
    runId: string,
    connectionId: string,
    repeat: boolean,
    nowMs: number,
  ): Promise<Result<CommandRow | null>> {
    return this.write((): Result<CommandRow | null> => {
      const run = this.currentRun(runId, connectionId);
      if (!run.ok) return run;
      const next = this.sql(
        "SELECT * FROM commands WHERE run_id = ? AND status IS NULL ORDER BY controller_seq LIMIT 1",
      ).get(runId) as Row | undefined;
      if (!next) return ok(null);
      if (next.last_delivered_connection_id === connectionId && !repeat) return ok(null);
      this.sql(
        "UPDATE commands SET delivery_count = delivery_count + 1, last_delivered_connection_id = ?, last_delivered_at = ? WHERE run_id = ? AND controller_seq = ?",
      ).run(connectionId, nowMs, runId, next.controller_seq);
      return ok(
        commandFrom(
          this.sql("SELECT * FROM commands WHERE run_id = ? AND controller_seq = ?").get(
            runId,
            next.controller_seq,
          ) as Row,
        ),
      );
    });
  }

  async recordCommandResult(
    runId: string,
    connectionId: string,
    res: NewCommandResult,
    nowMs: number,
  ): Promise<Result<{ duplicate: boolean; command: CommandRow }>> {
    return this.write((): Result<{ duplicate: boolean; command: CommandRow }> => {
      const run = this.currentRun(runId, connectionId);
      if (!run.ok) return run;
      const row = this.sql("SELECT * FROM commands WHERE run_id = ? AND command_id = ?").get(runId, res.commandId) as
        Row | undefined;
      const decided = commandResultDecision(runId, row ? commandFrom(row) : undefined, res);
      if (!decided.ok) return decided;
      if (decided.value.duplicate)
        this.sql("UPDATE runs SET duplicate_command_results = duplicate_command_results + 1 WHERE run_id = ?").run(
          runId,
        );
      else
        this.sql("UPDATE commands SET status = ?, result = ?, result_at = ? WHERE run_id = ? AND command_id = ?").run(
          res.status,
          res.result,
          nowMs,
          runId,
          res.commandId,
        );
      return decided;
    });
  }

  async recordMalformedFrame(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.write(() => {
      if (this.sql("UPDATE runs SET malformed_frames = malformed_frames + 1 WHERE run_id = ?").run(runId).changes === 1)
        this.insertDiagnostic(runId, diagnostic, nowMs);
    });
  }

  async recordDiagnostic(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.write(() => {
      if (this.runRow(runId)) this.insertDiagnostic(runId, diagnostic, nowMs);
    });
  }

  /**
   * A refusal before authentication: counted per code, and only the first and the latest of a
   * code are kept as diagnostics, apart from the window of 32, so that a flood of them never
   * pushes out what else happened to the run.
   */
  async recordAuthFailure(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.write(() => {
      if (!this.runRow(runId)) return;
      const code = diagnostic.code.slice(0, MAX_DIAGNOSTIC_CODE);
      const id = this.appendDiagnostic(runId, diagnostic, nowMs);
      const tally = this.sql("SELECT count, first_id, latest_id FROM auth_failures WHERE run_id = ? AND code = ?").get(
        runId,
        code,
      ) as Row | undefined;
      if (!tally)
        return void this.sql(
          "INSERT INTO auth_failures (run_id, code, count, first_id, latest_id) VALUES (?, ?, 1, ?, ?)",
        ).run(runId, code, id, id);
      if (tally.latest_id !== tally.first_id) this.sql("DELETE FROM diagnostics WHERE id = ?").run(tally.latest_id);
      this.sql("UPDATE auth_failures SET count = count + 1, latest_id = ? WHERE run_id = ? AND code = ?").run(
        id,
        runId,
        code,
      );
    });
  }

  authFailures(runId: string): Promise<Record<string, number>> {
    return this.read(() => {
      const rows = this.sql("SELECT code, count FROM auth_failures WHERE run_id = ? ORDER BY code").all(
        runId,
      ) as Array<{ code: string; count: number }>;
      return Object.fromEntries(rows.map((r) => [r.code, r.count]));
    });
  }
  runnerConnections(runId: string): Promise<RunnerConnection[]> {
    return this.read(() =>
      (
        this.sql("SELECT * FROM runner_connections WHERE run_id = ? ORDER BY connection_number").all(runId) as Row[]
      ).map(runnerConnectionFrom),
    );
  }

  /** Appends to the run's window of 32; the first and latest refusal of each code stay outside it. */
  private insertDiagnostic(runId: string, d: Diagnostic, nowMs: number): void {
    this.appendDiagnostic(runId, d, nowMs);
    this.sql(
      `DELETE FROM diagnostics WHERE run_id = @run AND id NOT IN (${AUTH_FAILURE_IDS})
      AND id NOT IN (SELECT id FROM diagnostics WHERE run_id = @run AND id NOT IN (${AUTH_FAILURE_IDS}) ORDER BY id DESC LIMIT @max)`,
    ).run({ run: runId, max: MAX_DIAGNOSTICS });
  }

  private appendDiagnostic(runId: string, d: Diagnostic, nowMs: number): number {
    const inserted = this.sql("INSERT INTO diagnostics (run_id, code, message, at) VALUES (?, ?, ?, ?)").run(
      runId,
      d.code.slice(0, MAX_DIAGNOSTIC_CODE),
      cutText(d.message, MAX_DIAGNOSTIC_MESSAGE),
      nowMs,
    );
    return Number(inserted.lastInsertRowid);
  }

  diagnostics(runId: string): Promise<Diagnostic[]> {
    return this.read(
      () => this.sql("SELECT code, message FROM diagnostics WHERE run_id = ? ORDER BY id").all(runId) as Diagnostic[],
    );
  }

  /** One authority process serves a SQLite store: no other instance commits to it. */
  subscribe(): () => void {
    return () => undefined;
  }

  /**
   * Copies the WAL into the database and has the next write start the WAL over from its
   * beginning, so that a small write on a full disk can reuse the WAL file's room instead of
   * growing it. False when it could not (a reader held it back, or the copy itself needed room).
   */
  restartJournal(): boolean {
    try {
      const [row] = this.db.pragma("wal_checkpoint(RESTART)") as Array<{ busy: number }>;
      return row?.busy === 0;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    while (this.open !== null) await this.open;
    if (this.db.open) this.db.close();
  }
}
