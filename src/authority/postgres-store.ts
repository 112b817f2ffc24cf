import { randomUUID } from "node:crypto";
import pg from "pg";
import { StateError } from "../storage/private-sqlite.js";
import { fail, ok, type Result } from "./errors.js";
import { cutText } from "../contract/text-cut.js";
import { checkIdentity, identityDifference, type RunIdentity } from "./identity.js";
import {
  COMMITTED_WINDOW,
  MAX_DIAGNOSTIC_CODE,
  MAX_DIAGNOSTIC_MESSAGE,
  MAX_DIAGNOSTICS,
  MAX_RUNNER_CONNECTIONS,
} from "./limits.js";
import { migrate } from "./postgres-schema.js";
import { opensServerKeyCheck, serverKeyCheck, type CredentialPlace } from "./sealed-credential.js";
import { ServerKey } from "./server-key.js";
import {
  appendCommandRefusal,
  appended,
  appendRefusal,
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
  StoreNotice,
  WithinCommit,
} from "./store.js";

export interface PostgresStoreOptions {
  /** Seals every stored auth key; kept outside the database (server-key-source.ts). */
  serverKey: ServerKey;
  /** As SqliteStoreOptions.adoptServerKey: delete every credential and adopt this key, once. */
  adoptServerKey?: boolean;
  /** Connections in the pool (default 10), besides the one that listens for notices. */
  poolSize?: number;
  /** How long to wait for a connection before the call fails (default 5 s). */
  connectTimeoutMs?: number;
  /** Diagnostics for a person (the notice connection lost and regained); never a secret. */
  log?: (text: string) => void;
  /** Refuse a database without the store's schema (`store_missing`) instead of making it there. */
  mustExist?: boolean;
}

/** The channel every instance on the database listens on. */
const CHANNEL = "prp_authority";
/** Retried whole: a deadlock or serialization failure between instances changed nothing. */
const RETRYABLE = new Set(["40001", "40P01"]);
const ATTEMPTS = 3;
const INT8 = 20;

/** BIGINT columns (times, counters) read as numbers: every one of them stays a safe integer. */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format as "text")) as pg.CustomTypesConfig["getTypeParser"],
};

/** The diagnostics a run's auth-failure tallies keep. */
const AUTH_FAILURE_IDS =
  "SELECT first_id FROM auth_failures WHERE run_id = $1 UNION SELECT latest_id FROM auth_failures WHERE run_id = $1";

/** A pg error's SQLSTATE, if it has one. */
const sqlState = (err: unknown): string | undefined =>
  typeof (err as { code?: unknown })?.code === "string" ? (err as { code: string }).code : undefined;

/** PostgreSQL TEXT holds no NUL: a diagnostic keeps the rest of its text. */
const text = (value: string, max: number): string => cutText(value, max).replaceAll("\0", "\uFFFD");

/**
 * The authority's durable store on PostgreSQL, for several authority instances on one
 * database (runtime.md §6.2). Every method is one transaction; those that change a run lock
 * its row first (`SELECT … FOR UPDATE`), so admissions, commits and command changes of one run
 * are serialised across instances, and always in the order run row, then credential rows.
 * Commands queued and revocations commit a NOTIFY, which every other instance's `subscribe`
 * listeners receive after the commit.
 */
export class PostgresAuthorityStore implements AuthorityStore {
  /** Tells this instance's own notices from another's. */
  private readonly origin = randomUUID();
  private readonly listeners = new Set<(notice: StoreNotice) => void>();
  private listener: pg.Client | null = null;
  private closed = false;
  private reconnect: NodeJS.Timeout | null = null;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly config: pg.ClientConfig,
    /** The database named without its password: what errors and logs say. */
    readonly location: string,
    private readonly serverKey: ServerKey,
    private readonly log: (text: string) => void,
  ) {}

  /**
   * Connects, applies pending migrations, checks the server key against the stored check and
   * starts listening for other instances' notices. Throws StateError on a database it must
   * refuse, and the connection error when the database is unreachable.
   */
  static async open(url: string, options: PostgresStoreOptions): Promise<PostgresAuthorityStore> {
    const location = redacted(url);
    if (!(options?.serverKey instanceof ServerKey))
      throw new StateError(
        "server_key_missing",
        location,
        "the store needs the server key its credentials are sealed under (the serverKey option)",
      );
    const config: pg.ClientConfig = {
      connectionString: url,
      types,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
      application_name: "prp-authority",
    };
    const log = options.log ?? (() => undefined);
    const pool = new pg.Pool({ ...config, max: options.poolSize ?? 10 });
    // An idle connection the server drops (a restart) is discarded; the next call reconnects.
    pool.on("error", (err) => log(`store ${location}: an idle connection failed: ${err.message}`));
    const store = new PostgresAuthorityStore(pool, config, location, options.serverKey, log);
    try {
      const client = await pool.connect();
      try {
        if (
          options.mustExist === true &&
          !(await client.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present"))
            .rows[0]?.present
        ) {
          throw new StateError(
            "store_missing",
            location,
            "no store in this database: prp authority serve or prp authority run create makes one; check --store",
          );
        }
        await migrate(client, location, Date.now());
      } finally {
        client.release();
      }
      await store.transaction((c) => store.checkServerKey(c, options.adoptServerKey === true));
      await store.listen();
      return store;
    } catch (err) {
      await store.close();
      throw err;
    }
  }

  private async checkServerKey(c: pg.PoolClient, adopt: boolean): Promise<void> {
    await c.query("LOCK TABLE meta IN EXCLUSIVE MODE");
    const check = (await c.query<{ value: string }>("SELECT value FROM meta WHERE key = 'server_key_check'")).rows[0];
    if (!check)
      return void (await c.query("INSERT INTO meta (key, value) VALUES ('server_key_check', $1)", [
        serverKeyCheck(this.serverKey),
      ]));
    if (opensServerKeyCheck(this.serverKey, check.value)) return;
    if (!adopt)
      throw new StateError(
        "state_server_key_mismatch",
        this.location,
        "the server key is not the one this store's credentials are sealed under: give the authority the key it was opened with before; to change the key, open it once with adoptServerKey, which deletes every ticket and lease (runners need a fresh ticket)",
      );
    await c.query("DELETE FROM credentials");
    await c.query("UPDATE meta SET value = $1 WHERE key = 'server_key_check'", [serverKeyCheck(this.serverKey)]);
  }

  /**
   * One transaction on one pooled connection; `fn`'s refusals commit what it wrote (nothing, by
   * the rules), a throw rolls back. A deadlock or serialization failure is retried whole.
   */
  private async transaction<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
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

  private async query(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.pool.query(sql, params)).rows as Row[];
  }

  private async lockRun(c: pg.PoolClient, runId: string): Promise<Row | undefined> {
    return (await c.query("SELECT * FROM runs WHERE run_id = $1 FOR UPDATE", [runId])).rows[0] as Row | undefined;
  }

  private async notify(c: pg.PoolClient, notice: StoreNotice): Promise<void> {
    // Delivered to the listeners only when this transaction commits.
    await c.query("SELECT pg_notify($1, $2)", [CHANNEL, JSON.stringify({ origin: this.origin, ...notice })]);
  }

  private seal(authKeyDigest: string, place: CredentialPlace): string {
    return sealedAuthKey(this.serverKey, authKeyDigest, place);
  }

  private credentialOf(r: Row): CredentialRow {
    return credentialFrom(r, this.serverKey, this.location);
  }

  private async terminalSourceSeq(c: pg.ClientBase | pg.Pool, runId: string): Promise<number | null> {
    const r = (
      await c.query(
        "SELECT MIN(source_seq) AS seq FROM committed_events WHERE run_id = $1 AND event_type = 'run.terminal'",
        [runId],
      )
    ).rows[0] as { seq: number | null };
    return r.seq;
  }

  private async snapshot(c: pg.ClientBase | pg.Pool, r: Row): Promise<RunSnapshot> {
    const runId = r.run_id as string;
    const deliveries = (
      await c.query("SELECT command_id, delivery_count FROM commands WHERE run_id = $1 ORDER BY controller_seq", [
        runId,
      ])
    ).rows as Array<{ command_id: string; delivery_count: number }>;
    return snapshotFrom(r, await this.terminalSourceSeq(c, runId), deliveries);
  }

  async registerRun(identity: RunIdentity, init: RunInit): Promise<Result<RunSnapshot>> {
    const checked = checkIdentity(identity);
    if (!checked.ok) return checked;
    const id = checked.value;
    return this.transaction(async (c) => {
      await c.query(
        `INSERT INTO runs (run_id, runner_instance_id, environment_lease_id, normalized_session_id, turn_id, item_id, protocol_version, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_id) DO NOTHING`,
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
      const run = (await this.lockRun(c, id.runId))!;
      const differs = identityDifference(identityFrom(run), id);
      if (differs)
        return fail("run_identity_mismatch", `/${differs}`, `run ${id.runId} is stored with another ${differs}`);
      return ok(await this.snapshot(c, run));
    });
  }

  async run(runId: string): Promise<RunSnapshot | undefined> {
    const [r] = await this.query("SELECT * FROM runs WHERE run_id = $1", [runId]);
    return r ? this.snapshot(this.pool, r) : undefined;
  }

  async runCursor(runId: string): Promise<RunCursor | undefined> {
    const [r] = await this.query(
      "SELECT r.*, (SELECT MIN(source_seq) FROM committed_events e WHERE e.run_id = r.run_id AND e.event_type = 'run.terminal') AS terminal_seq FROM runs r WHERE r.run_id = $1",
      [runId],
    );
    return r ? cursorFrom(r, r.terminal_seq as number | null) : undefined;
  }

  async runIds(): Promise<string[]> {
    return (await this.query('SELECT run_id FROM runs ORDER BY run_id COLLATE "C"')).map((r) => r.run_id as string);
  }

  async insertTicket(t: NewTicket): Promise<Result<void>> {
    return this.transaction(async (c) => {
      const run = await this.lockRun(c, t.runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${t.runId}`);
      await c.query(
        "INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, revocation_epoch) VALUES ($1, $2, 'bootstrap', $3, $4, $5, $6)",
        [
          t.credentialId,
          t.runId,
          this.seal(t.authKeyDigest, { credentialId: t.credentialId, runId: t.runId, kind: "bootstrap" }),
          t.issuedAtUnixMs,
          t.expiresAtUnixMs,
          run.revocation_epoch,
        ],
      );
      return ok(undefined);
    });
  }

  async credential(credentialId: string): Promise<CredentialRow | undefined> {
    const [r] = await this.query("SELECT * FROM credentials WHERE credential_id = $1", [credentialId]);
    return r ? this.credentialOf(r) : undefined;
  }

  async reauthorize(req: ReauthorizeRequest): Promise<Result<Reauthorized>> {
    return this.transaction(async (c): Promise<Result<Reauthorized>> => {
      // The run row first, then the credential: the one lock order of every method.
      const run = await this.lockRun(c, req.expected.runId);
      const [stored] = (
        await c.query("SELECT * FROM credentials WHERE credential_id = $1 FOR UPDATE", [req.expected.credentialId])
      ).rows as Row[];
      if (!stored || !run) return fail("unknown_credential", "/credentialId", "the credential is gone");
      const current = this.credentialOf(stored);
      const refused = reauthorizeRefusal(current, req);
      if (refused) return refused;
      let lease = current;
      if (current.kind === "bootstrap" && req.mint) {
        await c.query("UPDATE credentials SET used_at = $1 WHERE credential_id = $2", [
          req.nowMs,
          current.credentialId,
        ]);
        const [minted] = (
          await c.query(
            `INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, lease_id, revocation_epoch, protocol_version)
             VALUES ($1, $2, 'lease', $3, $4, $5, $6, $7, $8) RETURNING *`,
            [
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
            ],
          )
        ).rows as Row[];
        lease = this.credentialOf(minted!);
      }
      const n = (run.connection_count as number) + 1;
      const connectionId = `connection_${n}`;
      await c.query(
        `UPDATE runs SET connection_count = connection_count + 1, current_connection_id = $1, protocol_version = $2, last_lease_id = $3, last_lease_expires_at = $4,
           fresh_bootstraps = fresh_bootstraps + $5 WHERE run_id = $6`,
        [
          connectionId,
          req.selectedVersion,
          lease.leaseId,
          lease.expiresAtUnixMs,
          current.kind === "bootstrap" ? 1 : 0,
          current.runId,
        ],
      );
      await c.query(
        "INSERT INTO runner_connections (run_id, connection_number, connected_at, protocol_version, runner_version, runner_digest, contract_digest) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        [
          current.runId,
          n,
          req.nowMs,
          req.selectedVersion,
          req.runner?.runnerVersion ?? null,
          req.runner?.runnerDigest ?? null,
          req.runner?.contractDigest ?? null,
        ],
      );
      await c.query("DELETE FROM runner_connections WHERE run_id = $1 AND connection_number <= $2", [
        current.runId,
        n - MAX_RUNNER_CONNECTIONS,
      ]);
      return ok({
        connectionId,
        lease,
        freshBootstrap: current.kind === "bootstrap",
        ackedSourceSeq: run.acked_source_seq as number,
      });
    });
  }

  async revoke(runId: string, epoch: number | undefined, nowMs: number): Promise<Result<Revocation>> {
    return this.transaction(async (c): Promise<Result<Revocation>> => {
      const run = await this.lockRun(c, runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${runId}`);
      const raised = nextRevocationEpoch(run.revocation_epoch as number, epoch);
      if (!raised.ok) return raised;
      const next = raised.value;
      await c.query("UPDATE runs SET revocation_epoch = $1 WHERE run_id = $2", [next, runId]);
      const revoked = await c.query(
        "UPDATE credentials SET revoked_at = $1 WHERE run_id = $2 AND revoked_at IS NULL AND used_at IS NULL AND revocation_epoch < $3",
        [nowMs, runId, next],
      );
      await this.notify(c, { kind: "revoked", runId, revocationEpoch: next });
      return ok({ revocationEpoch: next, revokedCredentials: revoked.rowCount ?? 0 });
    });
  }

  async renewLease(req: RenewLeaseRequest): Promise<Result<LeaseRenewal>> {
    return this.transaction(async (c): Promise<Result<LeaseRenewal>> => {
      const run = await this.lockRun(c, req.runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${req.runId}`);
      const [stored] = (
        await c.query("SELECT * FROM credentials WHERE lease_id = $1 AND run_id = $2 AND kind = 'lease' FOR UPDATE", [
          req.leaseId,
          req.runId,
        ])
      ).rows as Row[];
      const lease = stored ? this.credentialOf(stored) : undefined;
      const renewal = lease
        ? ((await c.query("SELECT * FROM lease_renewals WHERE credential_id = $1", [lease.credentialId])).rows[0] as
            Row | undefined)
        : undefined;
      const decided = renewalDecision(req, run, lease, renewal);
      if (!decided.ok || decided.value.replayed || !lease) return decided;
      const { expiresAtUnixMs } = decided.value;
      await c.query("UPDATE credentials SET expires_at = $1 WHERE credential_id = $2", [
        expiresAtUnixMs,
        lease.credentialId,
      ]);
      await c.query(
        `INSERT INTO lease_renewals (credential_id, previous_expires_at, renewals, renewed_at) VALUES ($1, $2, 1, $3)
         ON CONFLICT (credential_id) DO UPDATE SET previous_expires_at = excluded.previous_expires_at, renewals = lease_renewals.renewals + 1, renewed_at = excluded.renewed_at`,
        [lease.credentialId, lease.expiresAtUnixMs, req.nowMs],
      );
      await c.query("UPDATE runs SET last_lease_expires_at = $1 WHERE run_id = $2", [expiresAtUnixMs, req.runId]);
      return decided;
    });
  }

  async prune(nowMs: number): Promise<number> {
    const deleted = await this.pool.query(
      "DELETE FROM credentials WHERE used_at IS NOT NULL OR revoked_at IS NOT NULL OR expires_at <= $1",
      [nowMs],
    );
    return deleted.rowCount ?? 0;
  }

  async committedEvent(runId: string, sourceEventId: string): Promise<CommittedEventRow | undefined> {
    const [r] = await this.query("SELECT * FROM committed_events WHERE run_id = $1 AND source_event_id = $2", [
      runId,
      sourceEventId,
    ]);
    return r ? eventFrom(r) : undefined;
  }

  async committedWindow(runId: string): Promise<CommittedEventRow[]> {
    return (await this.query("SELECT * FROM committed_events WHERE run_id = $1 ORDER BY source_seq", [runId])).map(
      eventFrom,
    );
  }

  async eventLog(runId: string, afterSourceSeq: number, limit: number): Promise<LoggedEvent[]> {
    return (
      await this.query("SELECT * FROM event_log WHERE run_id = $1 AND source_seq > $2 ORDER BY source_seq LIMIT $3", [
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
    return this.transaction(async (c): Promise<Result<{ ackedSourceSeq: number }>> => {
      const run = currentConnection(await this.lockRun(c, runId), runId, connectionId);
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
    if (!items.some((item) => item.withinCommit)) return this.transaction((c) => this.appendBatch(c, items, nowMs));
    // Run rows are locked in runId order, so two instances' batches cannot deadlock; a run's items keep their order.
    const order = items
      .map((item, index) => ({ item, index }))
      .sort((a, b) => (a.item.runId < b.item.runId ? -1 : a.item.runId > b.item.runId ? 1 : a.index - b.index));
    return this.transaction(async (c) => {
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
    const run = currentConnection(await this.lockRun(c, runId), runId, connectionId);
    if (!run.ok) return run;
    const refused = appendRefusal(
      e.sourceSeq,
      run.value.acked_source_seq as number,
      await this.terminalSourceSeq(c, runId),
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

  async command(runId: string, commandId: string): Promise<CommandRow | undefined> {
    const [r] = await this.query("SELECT * FROM commands WHERE run_id = $1 AND command_id = $2", [runId, commandId]);
    return r ? commandFrom(r) : undefined;
  }

  async commands(runId: string): Promise<CommandRow[]> {
    return (await this.query("SELECT * FROM commands WHERE run_id = $1 ORDER BY controller_seq", [runId])).map(
      commandFrom,
    );
  }

  async appendCommand(runId: string, cmd: NewCommand, nowMs: number): Promise<Result<CommandRow>> {
    return this.transaction(async (c): Promise<Result<CommandRow>> => {
      if (!(await this.lockRun(c, runId))) return fail("unknown_run", "/runId", `no run ${runId}`);
      const count = (
        (await c.query("SELECT COUNT(*) AS n FROM commands WHERE run_id = $1", [runId])).rows[0] as { n: number }
      ).n;
      const refused = appendCommandRefusal(runId, count, cmd.controllerSeq);
      if (refused) return refused;
      if (
        (await c.query("SELECT 1 FROM commands WHERE run_id = $1 AND command_id = $2", [runId, cmd.commandId])).rowCount
      )
        return fail("command_conflict", "/commandId", `${cmd.commandId} is already queued`);
      const [row] = (
        await c.query(
          "INSERT INTO commands (run_id, controller_seq, command_id, command_type, payload, envelope, queued_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *",
          [runId, cmd.controllerSeq, cmd.commandId, cmd.type, cmd.payload, cmd.envelope, nowMs],
        )
      ).rows as Row[];
      await this.notify(c, { kind: "command_queued", runId });
      return ok(commandFrom(row!));
    });
  }

  async deliverNextCommand(
    runId: string,
    connectionId: string,
    repeat: boolean,
    nowMs: number,
  ): Promise<Result<CommandRow | null>> {
    return this.transaction(async (c): Promise<Result<CommandRow | null>> => {
      const run = currentConnection(await this.lockRun(c, runId), runId, connectionId);
      if (!run.ok) return run;
      const [next] = (
        await c.query("SELECT * FROM commands WHERE run_id = $1 AND status IS NULL ORDER BY controller_seq LIMIT 1", [
          runId,
        ])
      ).rows as Row[];
      if (!next) return ok(null);
      if (next.last_delivered_connection_id === connectionId && !repeat) return ok(null);
      const [row] = (
        await c.query(
          "UPDATE commands SET delivery_count = delivery_count + 1, last_delivered_connection_id = $1, last_delivered_at = $2 WHERE run_id = $3 AND controller_seq = $4 RETURNING *",
          [connectionId, nowMs, runId, next.controller_seq],
        )
      ).rows as Row[];
      return ok(commandFrom(row!));
    });
  }

  async recordCommandResult(
    runId: string,
    connectionId: string,
    res: NewCommandResult,
    nowMs: number,
  ): Promise<Result<{ duplicate: boolean; command: CommandRow }>> {
    return this.transaction(async (c): Promise<Result<{ duplicate: boolean; command: CommandRow }>> => {
      const run = currentConnection(await this.lockRun(c, runId), runId, connectionId);
      if (!run.ok) return run;
      const [row] = (
        await c.query("SELECT * FROM commands WHERE run_id = $1 AND command_id = $2", [runId, res.commandId])
      ).rows as Row[];
      const decided = commandResultDecision(runId, row ? commandFrom(row) : undefined, res);
      if (!decided.ok) return decided;
      if (decided.value.duplicate)
        await c.query("UPDATE runs SET duplicate_command_results = duplicate_command_results + 1 WHERE run_id = $1", [
          runId,
        ]);
      else
        await c.query(
          "UPDATE commands SET status = $1, result = $2, result_at = $3 WHERE run_id = $4 AND command_id = $5",
          [res.status, res.result, nowMs, runId, res.commandId],
        );
      return decided;
    });
  }

  async recordMalformedFrame(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.transaction(async (c) => {
      if (
        (await c.query("UPDATE runs SET malformed_frames = malformed_frames + 1 WHERE run_id = $1", [runId]))
          .rowCount === 1
      )
        await this.insertDiagnostic(c, runId, diagnostic, nowMs);
    });
  }

  async recordDiagnostic(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.transaction(async (c) => {
      if (await this.lockRun(c, runId)) await this.insertDiagnostic(c, runId, diagnostic, nowMs);
    });
  }

  async recordAuthFailure(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.transaction(async (c) => {
      if (!(await this.lockRun(c, runId))) return;
      const code = text(diagnostic.code, MAX_DIAGNOSTIC_CODE);
      const id = await this.appendDiagnostic(c, runId, diagnostic, nowMs);
      const [tally] = (
        await c.query("SELECT count, first_id, latest_id FROM auth_failures WHERE run_id = $1 AND code = $2", [
          runId,
          code,
        ])
      ).rows as Row[];
      if (!tally)
        return void (await c.query(
          "INSERT INTO auth_failures (run_id, code, count, first_id, latest_id) VALUES ($1, $2, 1, $3, $3)",
          [runId, code, id],
        ));
      if (tally.latest_id !== tally.first_id) await c.query("DELETE FROM diagnostics WHERE id = $1", [tally.latest_id]);
      await c.query("UPDATE auth_failures SET count = count + 1, latest_id = $1 WHERE run_id = $2 AND code = $3", [
        id,
        runId,
        code,
      ]);
    });
  }

  async authFailures(runId: string): Promise<Record<string, number>> {
    const rows = await this.query('SELECT code, count FROM auth_failures WHERE run_id = $1 ORDER BY code COLLATE "C"', [
      runId,
    ]);
    return Object.fromEntries(rows.map((r) => [r.code as string, r.count as number]));
  }

  async runnerConnections(runId: string): Promise<RunnerConnection[]> {
    return (
      await this.query("SELECT * FROM runner_connections WHERE run_id = $1 ORDER BY connection_number", [runId])
    ).map(runnerConnectionFrom);
  }

  private async insertDiagnostic(c: pg.PoolClient, runId: string, d: Diagnostic, nowMs: number): Promise<void> {
    await this.appendDiagnostic(c, runId, d, nowMs);
    await c.query(
      `DELETE FROM diagnostics WHERE run_id = $1 AND id NOT IN (${AUTH_FAILURE_IDS})
       AND id NOT IN (SELECT id FROM diagnostics WHERE run_id = $1 AND id NOT IN (${AUTH_FAILURE_IDS}) ORDER BY id DESC LIMIT $2)`,
      [runId, MAX_DIAGNOSTICS],
    );
  }

  private async appendDiagnostic(c: pg.PoolClient, runId: string, d: Diagnostic, nowMs: number): Promise<number> {
    const [row] = (
      await c.query("INSERT INTO diagnostics (run_id, code, message, at) VALUES ($1, $2, $3, $4) RETURNING id", [
        runId,
        text(d.code, MAX_DIAGNOSTIC_CODE),
        text(d.message, MAX_DIAGNOSTIC_MESSAGE),
        nowMs,
      ])
    ).rows as Array<{ id: number }>;
    return row!.id;
  }

  async diagnostics(runId: string): Promise<Diagnostic[]> {
    return (await this.query("SELECT code, message FROM diagnostics WHERE run_id = $1 ORDER BY id", [
      runId,
    ])) as unknown as Diagnostic[];
  }

  subscribe(listener: (notice: StoreNotice) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /**
   * Keeps one connection listening on the channel. When it is lost (a database restart) it is
   * re-established, and the listeners hear `{ kind: "missed" }`: what was notified meanwhile is
   * gone, so they re-check what they serve.
   */
  private async listen(): Promise<void> {
    const client = new pg.Client(this.config);
    client.on("notification", (message) => this.deliver(message.payload));
    client.on("error", () => undefined); // a lost connection also ends, which is handled below
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      void client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) return void (await client.end().catch(() => undefined));
    client.on("end", () => this.lost(client));
    this.listener = client;
  }

  private lost(client: pg.Client): void {
    if (this.closed || this.listener !== client) return;
    this.listener = null;
    this.log(`store ${this.location}: the notice connection was lost; reconnecting`);
    this.relisten(100);
  }

  private relisten(delayMs: number): void {
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      if (this.closed) return;
      this.listen().then(
        () => {
          this.log(`store ${this.location}: listening for notices again`);
          this.emit({ kind: "missed" });
        },
        () => this.relisten(Math.min(delayMs * 2, 2_000)),
      );
    }, delayMs);
    this.reconnect.unref();
  }

  private deliver(payload: string | undefined): void {
    let notice: (StoreNotice & { origin?: string }) | undefined;
    try {
      notice = JSON.parse(payload ?? "") as StoreNotice & { origin?: string };
    } catch {
      return this.log(`store ${this.location}: a notice on ${CHANNEL} is not JSON; ignored`);
    }
    if (notice.origin === this.origin) return; // this instance acted on its own change already
    const { origin: _origin, ...rest } = notice;
    this.emit(rest as StoreNotice);
  }

  private emit(notice: StoreNotice): void {
    for (const listener of this.listeners) listener(notice);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
    await this.pool.end();
  }
}

/** The URL without its password. */
function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparseable url)";
  }
}
