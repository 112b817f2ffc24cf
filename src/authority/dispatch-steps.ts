import {
  candidateBatch,
  capScopes,
  CLAIM_ORDER,
  DETAIL,
  END_REASON,
  heldPairs,
  labelsMatch,
} from "./dispatch-rules.js";
import type { CredentialPlace } from "./sealed-credential.js";
import { dispatchFrom, identityFrom, runSpecFrom, truthy, workerFrom, type Row } from "./store-rows.js";
import { nextRevocationEpoch } from "./store-rules.js";
import type { DispatchRow, WorkerPoll, WorkerPollResult, WorkerRow } from "./store.js";

/**
 * The steps the dispatch part's rules are made of, over one database (DispatchDb): reading a
 * worker's claims with their facts, ending, taking back and releasing a claim, revoking a run's
 * credentials, and claiming in order under the caps. dispatch-store.ts composes them.
 */
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
export const FACTS = `SELECT d.*, COALESCE(s.labels, '{}') AS labels, r.last_lease_expires_at,
  (r.acked_source_seq > 0 OR EXISTS (SELECT 1 FROM commands c WHERE c.run_id = d.run_id AND c.status IS NOT NULL)) AS started,
  EXISTS (SELECT 1 FROM committed_events e WHERE e.run_id = d.run_id AND e.event_type = 'run.terminal') AS terminal
  FROM dispatch d JOIN runs r ON r.run_id = d.run_id LEFT JOIN run_specs s ON s.run_id = d.run_id`;
export const ROW = `SELECT d.*, COALESCE(s.labels, '{}') AS labels FROM dispatch d LEFT JOIN run_specs s ON s.run_id = d.run_id`;
export const WORKER = `SELECT w.*, (SELECT COUNT(*) FROM dispatch d WHERE d.worker_id = w.worker_id AND d.state = 'claimed') AS active_runs FROM workers w`;
/** Claimed runs holding a slot of the cap `?`. */
const ACTIVE = `SELECT COUNT(*) AS n FROM dispatch d WHERE d.state = 'claimed' AND (? = '*' OR EXISTS
  (SELECT 1 FROM run_labels l WHERE l.run_id = d.run_id AND l.key || '=' || l.value = ?))`;

const marks = (n: number): string => Array.from({ length: n }, () => "?").join(", ");

export type Claim = WorkerPollResult["claims"][number];

export async function workerIn(db: DispatchDb, workerId: string): Promise<WorkerRow | undefined> {
  const [r] = await db.all(`${WORKER} WHERE w.worker_id = ?`, [workerId]);
  return r ? workerFrom(r) : undefined;
}

export async function rowsIn(db: DispatchDb, runIds: readonly string[]): Promise<DispatchRow[]> {
  if (runIds.length === 0) return [];
  return (await db.all(`${ROW} WHERE d.run_id IN (${marks(runIds.length)}) ORDER BY d.run_id`, [...runIds])).map(
    dispatchFrom,
  );
}

/** A worker's claims with their facts, locked (a sweep skips those another instance holds). */
export function claimsOf(db: DispatchDb, workerId: string, skipLocked: boolean): Promise<Row[]> {
  return db.all(
    `${FACTS} WHERE d.state = 'claimed' AND d.worker_id = ? ORDER BY d.run_id${db.forUpdate("d", skipLocked)}`,
    [workerId],
  );
}

/** A worker's claims, locked, without their facts: what a poll that judges none of them needs. */
export function claimIdsOf(db: DispatchDb, workerId: string): Promise<Row[]> {
  return db.all(`${ROW} WHERE d.state = 'claimed' AND d.worker_id = ? ORDER BY d.run_id${db.forUpdate("d")}`, [
    workerId,
  ]);
}

/** These claims with their facts (already locked by claimIdsOf in this transaction). */
export async function factsOf(db: DispatchDb, runIds: readonly string[]): Promise<Row[]> {
  if (runIds.length === 0) return [];
  return db.all(`${FACTS} WHERE d.run_id IN (${marks(runIds.length)}) ORDER BY d.run_id`, [...runIds]);
}

export async function active(db: DispatchDb, scope: string): Promise<number> {
  const [r] = await db.all(ACTIVE, [scope, scope]);
  return Number(r!.n);
}

/** A lost worker's claim (sweep, revoke): whether it changed. A started run with a live lease is left to its runner. */
export async function sweepClaim(
  db: DispatchDb,
  row: Row,
  nowMs: number,
  maxAttempts: number,
  detail: string,
): Promise<boolean> {
  if (truthy(row.terminal)) await end(db, row, null, null);
  else if (!truthy(row.started)) await takeBack(db, row, nowMs, maxAttempts, END_REASON.workerLost, detail);
  else if (row.last_lease_expires_at === null || Number(row.last_lease_expires_at) < nowMs)
    await end(db, row, END_REASON.workerLost, DETAIL.runnerGone);
  else return false;
  return true;
}

export async function end(db: DispatchDb, row: Row, reason: string | null, detail: string | null): Promise<void> {
  await db.run(
    "UPDATE dispatch SET state = 'ended', worker_id = NULL, ended_at = ?, end_reason = ?, end_detail = ? WHERE run_id = ?",
    [Date.now(), reason, detail, row.run_id],
  );
}

/** Requeues an unstarted claim, or ends it past maxAttempts; a started one is left claimed. */
export async function takeBack(
  db: DispatchDb,
  row: Row,
  nowMs: number,
  maxAttempts: number,
  reason: string,
  detail: string,
): Promise<void> {
  if (truthy(row.started)) return;
  if (Number(row.attempts) >= maxAttempts) await end(db, row, reason, detail);
  else await requeue(db, row, 0);
  await revokeRun(db, row.run_id as string, nowMs);
}

/** A claim given back: requeued, the attempt not counted (a claim has counted one, so attempts stays ≥ 0). */
export async function release(db: DispatchDb, row: Row, nowMs: number): Promise<void> {
  await requeue(db, row, 1);
  await revokeRun(db, row.run_id as string, nowMs);
}

export async function requeue(db: DispatchDb, row: Row, uncount: number): Promise<void> {
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
export async function revokeRun(db: DispatchDb, runId: string, nowMs: number): Promise<void> {
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
export async function claim(db: DispatchDb, poll: WorkerPoll, room: number): Promise<Row[]> {
  const claimed: Row[] = [];
  if (room <= 0) return claimed;
  // Which scopes have a cap at all: a candidate none of whose scopes has one needs no count.
  const capped = new Set((await db.all("SELECT scope FROM admission_caps")).map((c) => c.scope as string));
  // Only runs whose every label the worker holds: the candidates locked are ones it may claim.
  const held = heldPairs(poll);
  const fits = `NOT EXISTS (SELECT 1 FROM run_labels l WHERE l.run_id = d.run_id${
    held.length > 0 ? ` AND l.key || '=' || l.value NOT IN (${marks(held.length)})` : ""
  })`;
  let after: Row | undefined;
  while (claimed.length < room) {
    // Without caps every candidate is claimed: lock no more than are wanted.
    const batch = capped.size === 0 ? room - claimed.length : candidateBatch(room - claimed.length);
    const page = await db.all(
      `${ROW} WHERE d.state = 'queued' AND ${fits}${
        after
          ? " AND (d.priority < ? OR (d.priority = ? AND (d.queued_at > ? OR (d.queued_at = ? AND d.run_id > ?))))"
          : ""
      } ORDER BY ${CLAIM_ORDER} LIMIT ?${db.forUpdate("d", true)}`,
      [
        ...held,
        ...(after ? [after.priority, after.priority, after.queued_at, after.queued_at, after.run_id] : []),
        batch,
      ],
    );
    for (const row of page) {
      after = row;
      if (claimed.length >= room) break;
      const labels = JSON.parse(row.labels as string) as Record<string, string>;
      if (!labelsMatch(labels, poll)) continue;
      const scopes = capScopes(labels).filter((scope) => capped.has(scope));
      if (scopes.length > 0 && !(await admits(db, scopes))) continue;
      // Read after the counts: the exact record the caps are judged by.
      const claimedAt = Date.now();
      await db.run(
        "UPDATE dispatch SET state = 'claimed', worker_id = ?, claim_request_id = ?, claimed_at = ?, attempts = attempts + 1 WHERE run_id = ?",
        [poll.workerId, poll.requestId, claimedAt, row.run_id],
      );
      claimed.push({
        ...row,
        state: "claimed",
        worker_id: poll.workerId,
        claim_request_id: poll.requestId,
        claimed_at: claimedAt,
        attempts: Number(row.attempts) + 1,
      });
    }
    if (page.length === 0 || claimed.length >= room) break;
  }
  return claimed;
}

/** No cap of these scopes is full; their rows locked in scope order, so concurrent claims count one at a time. */
export async function admits(db: DispatchDb, scopes: string[]): Promise<boolean> {
  const caps = await db.all(
    `SELECT scope, max FROM admission_caps WHERE scope IN (${marks(scopes.length)}) ORDER BY scope${db.forUpdate()}`,
    scopes,
  );
  for (const c of caps) if ((await active(db, c.scope as string)) >= Number(c.max)) return false;
  return true;
}

/** A claimed row (as claimed in this transaction, or read with it) handed out with a fresh ticket. */
export async function handOut(db: DispatchDb, row: Row, poll: WorkerPoll): Promise<Claim> {
  const runId = row.run_id as string;
  // The run (locked: its epoch goes on the ticket) and its spec in one read.
  const [run] = await db.all(
    `SELECT r.*, s.spec, s.spec_digest, s.labels, s.priority, s.created_by, s.created_at AS spec_created_at, s.trace_parent
     FROM runs r JOIN run_specs s ON s.run_id = r.run_id WHERE r.run_id = ?${db.forUpdate("r")}`,
    [runId],
  );
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
  return {
    dispatch: dispatchFrom(row),
    identity: identityFrom(run!),
    spec: runSpecFrom(run!),
    protocolVersion: Number(run!.protocol_version),
    credentialId: t.credentialId,
  };
}
