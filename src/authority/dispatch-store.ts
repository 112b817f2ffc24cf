import {
  candidateBatch,
  capScopes,
  checkCap,
  CLAIM_ORDER,
  DETAIL,
  END_REASON,
  exitText,
  labelsMatch,
} from "./dispatch-rules.js";
import { fail, ok, type Result } from "./errors.js";
import type { CredentialPlace } from "./sealed-credential.js";
import { dispatchFrom, identityFrom, runSpecFrom, truthy, workerFrom, type Row } from "./store-rows.js";
import { nextRevocationEpoch } from "./store-rules.js";
import type {
  CapUsage,
  DispatchPart,
  DispatchRow,
  NewWorker,
  WorkerPoll,
  WorkerPollResult,
  WorkerRow,
} from "./store.js";

/**
 * One database as the dispatch part speaks to it, inside a transaction or a read. SQL is written
 * once, with `?` parameters; each database's part adapts it (PostgreSQL numbers them) and says
 * which row locks it takes (SQLite has one writer: its checks inside a write are exact).
 */
export interface DispatchDb {
  all(sql: string, params?: unknown[]): Promise<Row[]>;
  run(sql: string, params?: unknown[]): Promise<number>;
  /** ` FOR UPDATE` (of the dispatch rows `d` when `of` is given), or "" where a write is already exclusive. */
  forUpdate(of?: string, skipLocked?: boolean): string;
  /** Tells other instances a run's credentials were revoked (PostgreSQL NOTIFY; nothing on SQLite). */
  revoked(runId: string, revocationEpoch: number): Promise<void>;
  seal(authKeyDigest: string, place: CredentialPlace): string;
}

/** A dispatch row with what the rules judge it by: started, terminal committed, lease expiry. */
const FACTS = `SELECT d.*, COALESCE(s.labels, '{}') AS labels, r.last_lease_expires_at,
  (r.acked_source_seq > 0 OR EXISTS (SELECT 1 FROM commands c WHERE c.run_id = d.run_id AND c.status IS NOT NULL)) AS started,
  EXISTS (SELECT 1 FROM committed_events e WHERE e.run_id = d.run_id AND e.event_type = 'run.terminal') AS terminal
  FROM dispatch d JOIN runs r ON r.run_id = d.run_id LEFT JOIN run_specs s ON s.run_id = d.run_id`;
const ROW = `SELECT d.*, COALESCE(s.labels, '{}') AS labels FROM dispatch d LEFT JOIN run_specs s ON s.run_id = d.run_id`;
const WORKER = `SELECT w.*, (SELECT COUNT(*) FROM dispatch d WHERE d.worker_id = w.worker_id AND d.state = 'claimed') AS active_runs FROM workers w`;
const SPEC =
  "SELECT run_id, spec, spec_digest, labels, priority, created_by, created_at AS spec_created_at FROM run_specs";
/** Claimed runs holding a slot of the cap `?`. */
const ACTIVE = `SELECT COUNT(*) AS n FROM dispatch d WHERE d.state = 'claimed' AND (? = '*' OR EXISTS
  (SELECT 1 FROM run_labels l WHERE l.run_id = d.run_id AND l.key || '=' || l.value = ?))`;

const marks = (n: number): string => Array.from({ length: n }, () => "?").join(", ");

type Claim = WorkerPollResult["claims"][number];

/**
 * The dispatch part's rules, once for both databases (design of issue 28): each database's part
 * supplies its transactions and its dialect (DispatchDb), never its own copy of the rules.
 */
export abstract class DispatchStore implements DispatchPart {
  protected abstract read<T>(fn: (db: DispatchDb) => Promise<T>): Promise<T>;
  protected abstract write<T>(fn: (db: DispatchDb) => Promise<T>): Promise<T>;

  insertWorker(w: NewWorker): Promise<Result<WorkerRow>> {
    return this.write(async (db): Promise<Result<WorkerRow>> => {
      const [taken] = await db.all("SELECT 1 FROM workers WHERE worker_id = ? OR name = ?", [w.workerId, w.name]);
      if (taken) return fail("worker_exists", "/name", `a worker named ${w.name} (or with id ${w.workerId}) exists`);
      await db.run("INSERT INTO workers (worker_id, name, digest, created_at) VALUES (?, ?, ?, ?)", [
        w.workerId,
        w.name,
        w.digest,
        w.createdAtUnixMs,
      ]);
      return ok((await this.workerIn(db, w.workerId))!);
    });
  }

  worker(workerId: string): Promise<WorkerRow | undefined> {
    return this.read((db) => this.workerIn(db, workerId));
  }

  workers(): Promise<WorkerRow[]> {
    return this.read(async (db) => (await db.all(`${WORKER} ORDER BY w.created_at, w.worker_id`)).map(workerFrom));
  }

  revokeWorker(workerId: string, nowMs: number, maxAttempts: number): Promise<Result<WorkerRow>> {
    return this.write(async (db): Promise<Result<WorkerRow>> => {
      const [w] = await db.all(`SELECT * FROM workers WHERE worker_id = ?${db.forUpdate()}`, [workerId]);
      if (!w) return fail("unknown_worker", "/workerId", `no worker ${workerId}`);
      await db.run("UPDATE workers SET revoked_at = COALESCE(revoked_at, ?) WHERE worker_id = ?", [nowMs, workerId]);
      for (const row of await this.claimsOf(db, workerId, false))
        await this.sweepClaim(db, row, nowMs, maxAttempts, DETAIL.revoked(w.name as string));
      return ok((await this.workerIn(db, workerId))!);
    });
  }

  pollWorker(poll: WorkerPoll): Promise<Result<WorkerPollResult>> {
    return this.write(async (db): Promise<Result<WorkerPollResult>> => {
      // 1. The heartbeat, under the worker row's lock: one poll of a worker at a time.
      const [w] = await db.all(`SELECT * FROM workers WHERE worker_id = ?${db.forUpdate()}`, [poll.workerId]);
      if (!w) return fail("unknown_worker", "/workerId", `no worker ${poll.workerId}`);
      if (w.revoked_at !== null) return fail("worker_revoked", "/workerId", `worker ${poll.workerId} is revoked`);
      await db.run("UPDATE workers SET labels = ?, max_runs = ?, draining = ?, last_seen_at = ? WHERE worker_id = ?", [
        JSON.stringify(poll.labels),
        poll.maxRuns,
        poll.draining,
        poll.nowMs,
        poll.workerId,
      ]);
      const claims = new Map((await this.claimsOf(db, poll.workerId, false)).map((r) => [r.run_id as string, r]));
      // 2. Exits: the runner's terminal ends the dispatch; an exit before any event counts as a lost attempt.
      for (const e of poll.exited) {
        const row = claims.get(e.runId);
        if (!row) continue;
        claims.delete(e.runId);
        const exit = exitText(e.exitCode, e.signal);
        if (truthy(row.terminal)) await this.end(db, row, null, null);
        else if (!truthy(row.started))
          await this.takeBack(
            db,
            row,
            poll.nowMs,
            poll.maxAttempts,
            END_REASON.runnerExited,
            DETAIL.exitedUnstarted(exit),
          );
        else await this.end(db, row, END_REASON.runnerExited, DETAIL.exitedStarted(exit));
      }
      // 3. Releases: given back unstarted, requeued without counting the attempt.
      for (const runId of poll.released) {
        const row = claims.get(runId);
        if (!row || truthy(row.started)) continue;
        claims.delete(runId);
        await this.release(db, row, poll.nowMs);
      }
      // 4. A retry of this request hands out what it claimed, and claims nothing new.
      let handed = [...claims.values()].filter((r) => r.claim_request_id === poll.requestId);
      if (handed.length === 0) {
        // 5. Reconcile: a claim the worker does not run is taken back (a started one is left to its lease).
        const held = new Set(poll.held);
        for (const row of claims.values())
          if (!held.has(row.run_id as string))
            await this.takeBack(db, row, poll.nowMs, poll.maxAttempts, END_REASON.workerLost, DETAIL.notHeld);
        // 6. New claims.
        const room = poll.draining ? 0 : Math.min(poll.want, poll.maxRuns - poll.held.length);
        handed = await this.claim(db, poll, room);
      }
      // 7. A fresh ticket for each run handed out, in this transaction.
      const out: Claim[] = [];
      for (const row of handed) out.push(await this.handOut(db, row.run_id as string, poll));
      // 8. What the worker runs that is no longer its own.
      const mine = new Set((await this.claimsOf(db, poll.workerId, false)).map((r) => r.run_id as string));
      const lost = poll.held.filter((runId) => !mine.has(runId));
      return ok({ worker: (await this.workerIn(db, poll.workerId))!, claims: out, lost });
    });
  }

  sweepWorkers(nowMs: number, graceMs: number, maxAttempts: number): Promise<DispatchRow[]> {
    return this.write(async (db) => {
      const silent = await db.all(
        "SELECT * FROM workers WHERE revoked_at IS NOT NULL OR last_seen_at < ? ORDER BY worker_id",
        [nowMs - graceMs],
      );
      const changed: string[] = [];
      for (const w of silent) {
        const detail =
          w.revoked_at !== null
            ? DETAIL.revoked(w.name as string)
            : DETAIL.silent(w.name as string, w.last_seen_at as number);
        for (const row of await this.claimsOf(db, w.worker_id as string, true))
          if (await this.sweepClaim(db, row, nowMs, maxAttempts, detail)) changed.push(row.run_id as string);
      }
      // A claim by hand gets no exit report: its committed terminal is what ends it.
      const byHand = await db.all(
        `${FACTS} WHERE d.state = 'claimed' AND d.worker_id IS NULL ORDER BY d.run_id${db.forUpdate("d", true)}`,
      );
      for (const row of byHand)
        if (truthy(row.terminal)) {
          await this.end(db, row, null, null);
          changed.push(row.run_id as string);
        }
      return this.rowsIn(db, changed);
    });
  }

  cancelQueued(runId: string, nowMs: number): Promise<Result<{ cancelled: boolean; dispatch: DispatchRow }>> {
    return this.write(async (db): Promise<Result<{ cancelled: boolean; dispatch: DispatchRow }>> => {
      const [row] = await db.all(`${FACTS} WHERE d.run_id = ?${db.forUpdate("d")}`, [runId]);
      if (!row) return fail("not_queued", "/runId", `run ${runId} was not queued (not created through the API)`);
      if (row.state === "ended") return fail("run_ended", "/runId", `run ${runId}'s dispatch has ended`);
      if (row.state === "claimed") return ok({ cancelled: false, dispatch: dispatchFrom(row) });
      await this.end(db, row, END_REASON.cancelled, DETAIL.cancelled);
      await this.revokeRun(db, runId, nowMs);
      return ok({ cancelled: true, dispatch: (await this.rowsIn(db, [runId]))[0]! });
    });
  }

  claimByHand(runId: string, _nowMs: number): Promise<Result<DispatchRow | null>> {
    return this.write(async (db): Promise<Result<DispatchRow | null>> => {
      const [row] = await db.all(`${ROW} WHERE d.run_id = ?${db.forUpdate("d")}`, [runId]);
      if (!row) return ok(null);
      if (row.state === "ended") return fail("run_ended", "/runId", `run ${runId}'s dispatch has ended`);
      if (row.state === "claimed" && row.worker_id !== null)
        return fail("run_claimed", "/runId", `worker ${String(row.worker_id)} holds run ${runId}`);
      if (row.state === "queued")
        await db.run(
          "UPDATE dispatch SET state = 'claimed', worker_id = NULL, claim_request_id = NULL, claimed_at = ?, attempts = attempts + 1 WHERE run_id = ?",
          [Date.now(), runId],
        );
      return ok((await this.rowsIn(db, [runId]))[0]!);
    });
  }

  dispatch(runIds: readonly string[]): Promise<DispatchRow[]> {
    return this.read((db) => this.rowsIn(db, runIds));
  }

  queuedRuns(limit: number): Promise<DispatchRow[]> {
    return this.read(async (db) =>
      (await db.all(`${ROW} WHERE d.state = 'queued' ORDER BY ${CLAIM_ORDER} LIMIT ?`, [limit])).map(dispatchFrom),
    );
  }

  setCap(scope: string, max: number | null): Promise<Result<void>> {
    const checked = checkCap(scope, max);
    if (!checked.ok) return Promise.resolve(checked);
    return this.write(async (db) => {
      if (max === null) await db.run("DELETE FROM admission_caps WHERE scope = ?", [scope]);
      else
        await db.run(
          "INSERT INTO admission_caps (scope, max) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET max = excluded.max",
          [scope, max],
        );
      return ok(undefined);
    });
  }

  caps(): Promise<CapUsage[]> {
    return this.read(async (db) => {
      const caps = await db.all("SELECT scope, max FROM admission_caps ORDER BY scope");
      const out: CapUsage[] = [];
      for (const c of caps)
        out.push({ scope: c.scope as string, max: Number(c.max), active: await this.active(db, c.scope as string) });
      return out;
    });
  }

  private async workerIn(db: DispatchDb, workerId: string): Promise<WorkerRow | undefined> {
    const [r] = await db.all(`${WORKER} WHERE w.worker_id = ?`, [workerId]);
    return r ? workerFrom(r) : undefined;
  }

  private async rowsIn(db: DispatchDb, runIds: readonly string[]): Promise<DispatchRow[]> {
    if (runIds.length === 0) return [];
    return (await db.all(`${ROW} WHERE d.run_id IN (${marks(runIds.length)}) ORDER BY d.run_id`, [...runIds])).map(
      dispatchFrom,
    );
  }

  /** A worker's claims with their facts, locked (a sweep skips those another instance holds). */
  private claimsOf(db: DispatchDb, workerId: string, skipLocked: boolean): Promise<Row[]> {
    return db.all(
      `${FACTS} WHERE d.state = 'claimed' AND d.worker_id = ? ORDER BY d.run_id${db.forUpdate("d", skipLocked)}`,
      [workerId],
    );
  }

  private async active(db: DispatchDb, scope: string): Promise<number> {
    const [r] = await db.all(ACTIVE, [scope, scope]);
    return Number(r!.n);
  }

  /** A lost worker's claim (sweep, revoke): whether it changed. A started run with a live lease is left to its runner. */
  private async sweepClaim(
    db: DispatchDb,
    row: Row,
    nowMs: number,
    maxAttempts: number,
    detail: string,
  ): Promise<boolean> {
    if (truthy(row.terminal)) await this.end(db, row, null, null);
    else if (!truthy(row.started)) await this.takeBack(db, row, nowMs, maxAttempts, END_REASON.workerLost, detail);
    else if (row.last_lease_expires_at === null || Number(row.last_lease_expires_at) < nowMs)
      await this.end(db, row, END_REASON.workerLost, DETAIL.runnerGone);
    else return false;
    return true;
  }

  private async end(db: DispatchDb, row: Row, reason: string | null, detail: string | null): Promise<void> {
    await db.run(
      "UPDATE dispatch SET state = 'ended', worker_id = NULL, ended_at = ?, end_reason = ?, end_detail = ? WHERE run_id = ?",
      [Date.now(), reason, detail, row.run_id],
    );
  }

  /** Requeues an unstarted claim, or ends it past maxAttempts; a started one is left claimed. */
  private async takeBack(
    db: DispatchDb,
    row: Row,
    nowMs: number,
    maxAttempts: number,
    reason: string,
    detail: string,
  ): Promise<void> {
    if (truthy(row.started)) return;
    if (Number(row.attempts) >= maxAttempts) await this.end(db, row, reason, detail);
    else await this.requeue(db, row, 0);
    await this.revokeRun(db, row.run_id as string, nowMs);
  }

  /** A claim given back: requeued, the attempt not counted (a claim has counted one, so attempts stays ≥ 0). */
  private async release(db: DispatchDb, row: Row, nowMs: number): Promise<void> {
    await this.requeue(db, row, 1);
    await this.revokeRun(db, row.run_id as string, nowMs);
  }

  private async requeue(db: DispatchDb, row: Row, uncount: number): Promise<void> {
    await db.run(
      `UPDATE dispatch SET state = 'queued', worker_id = NULL, claim_request_id = NULL, claimed_at = NULL,
       attempts = attempts - ? WHERE run_id = ?`,
      [uncount, row.run_id],
    );
  }

  /**
   * As `revoke` does, and the current connection cleared: a runner the lost worker may still
   * have started can then commit nothing.
   */
  private async revokeRun(db: DispatchDb, runId: string, nowMs: number): Promise<void> {
    const [run] = await db.all(`SELECT revocation_epoch FROM runs WHERE run_id = ?${db.forUpdate()}`, [runId]);
    const next = nextRevocationEpoch(Number(run!.revocation_epoch), undefined);
    if (!next.ok) throw new Error(next.error.message);
    await db.run("UPDATE runs SET revocation_epoch = ?, current_connection_id = NULL WHERE run_id = ?", [
      next.value,
      runId,
    ]);
    await db.run(
      "UPDATE credentials SET revoked_at = ? WHERE run_id = ? AND revoked_at IS NULL AND used_at IS NULL AND revocation_epoch < ?",
      [nowMs, runId, next.value],
    );
    await db.revoked(runId, next.value);
  }

  /** Up to `room` claimable runs in claim order, skipping those a cap or the worker's labels exclude. */
  private async claim(db: DispatchDb, poll: WorkerPoll, room: number): Promise<Row[]> {
    const claimed: Row[] = [];
    let after: Row | undefined;
    while (claimed.length < room) {
      const page = await db.all(
        `${ROW} WHERE d.state = 'queued'${
          after
            ? " AND (d.priority < ? OR (d.priority = ? AND (d.queued_at > ? OR (d.queued_at = ? AND d.run_id > ?))))"
            : ""
        } ORDER BY ${CLAIM_ORDER} LIMIT ?${db.forUpdate("d", true)}`,
        [
          ...(after ? [after.priority, after.priority, after.queued_at, after.queued_at, after.run_id] : []),
          candidateBatch(room - claimed.length),
        ],
      );
      for (const row of page) {
        after = row;
        if (claimed.length >= room) break;
        const labels = JSON.parse(row.labels as string) as Record<string, string>;
        if (!labelsMatch(labels, poll.labels) || !(await this.admits(db, capScopes(labels)))) continue;
        // Read after the counts: the exact record the caps are judged by.
        await db.run(
          "UPDATE dispatch SET state = 'claimed', worker_id = ?, claim_request_id = ?, claimed_at = ?, attempts = attempts + 1 WHERE run_id = ?",
          [poll.workerId, poll.requestId, Date.now(), row.run_id],
        );
        claimed.push(row);
      }
      if (page.length === 0 || claimed.length >= room) break;
    }
    return claimed;
  }

  /** No cap of these scopes is full; their rows locked in scope order, so concurrent claims count one at a time. */
  private async admits(db: DispatchDb, scopes: string[]): Promise<boolean> {
    const caps = await db.all(
      `SELECT scope, max FROM admission_caps WHERE scope IN (${marks(scopes.length)}) ORDER BY scope${db.forUpdate()}`,
      scopes,
    );
    for (const c of caps) if ((await this.active(db, c.scope as string)) >= Number(c.max)) return false;
    return true;
  }

  private async handOut(db: DispatchDb, runId: string, poll: WorkerPoll): Promise<Claim> {
    const [run] = await db.all(`SELECT * FROM runs WHERE run_id = ?${db.forUpdate()}`, [runId]);
    const t = poll.mintTicket(runId, poll.nowMs);
    await db.run(
      "INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, revocation_epoch) VALUES (?, ?, 'bootstrap', ?, ?, ?, ?)",
      [
        t.credentialId,
        runId,
        db.seal(t.authKeyDigest, { credentialId: t.credentialId, runId, kind: "bootstrap" }),
        t.issuedAtUnixMs,
        t.expiresAtUnixMs,
        run!.revocation_epoch,
      ],
    );
    const [spec] = await db.all(`${SPEC} WHERE run_id = ?`, [runId]);
    return {
      dispatch: (await this.rowsIn(db, [runId]))[0]!,
      identity: identityFrom(run!),
      spec: runSpecFrom(spec!),
      protocolVersion: Number(run!.protocol_version),
      credentialId: t.credentialId,
    };
  }
}
