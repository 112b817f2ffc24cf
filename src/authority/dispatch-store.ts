import { checkCap, CLAIM_ORDER, DETAIL, END_REASON, exitText } from "./dispatch-rules.js";
import {
  active,
  claim,
  claimIdsOf,
  claimsOf,
  end,
  factsOf,
  FACTS,
  handOut,
  release,
  ROW,
  revokeRun,
  rowsIn,
  sweepClaim,
  takeBack,
  WORKER,
  workerIn,
  type Claim,
  type DispatchDb,
} from "./dispatch-steps.js";
import { fail, ok, type Result } from "./errors.js";
import { dispatchFrom, truthy, workerFrom, type Row } from "./store-rows.js";
import type {
  CapUsage,
  DispatchPart,
  DispatchRow,
  NewWorker,
  WorkerPoll,
  WorkerPollResult,
  WorkerRow,
} from "./store.js";

export type { DispatchDb } from "./dispatch-steps.js";

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
      return ok((await workerIn(db, w.workerId))!);
    });
  }

  worker(workerId: string): Promise<WorkerRow | undefined> {
    return this.read((db) => workerIn(db, workerId));
  }

  workers(): Promise<WorkerRow[]> {
    return this.read(async (db) => (await db.all(`${WORKER} ORDER BY w.created_at, w.worker_id`)).map(workerFrom));
  }

  revokeWorker(workerId: string, nowMs: number, maxAttempts: number): Promise<Result<WorkerRow>> {
    return this.write(async (db): Promise<Result<WorkerRow>> => {
      const [w] = await db.all(`SELECT * FROM workers WHERE worker_id = ?${db.forUpdate()}`, [workerId]);
      if (!w) return fail("unknown_worker", "/workerId", `no worker ${workerId}`);
      await db.run("UPDATE workers SET revoked_at = COALESCE(revoked_at, ?) WHERE worker_id = ?", [nowMs, workerId]);
      for (const row of await claimsOf(db, workerId, false))
        await sweepClaim(db, row, nowMs, maxAttempts, DETAIL.revoked(w.name as string));
      return ok((await workerIn(db, workerId))!);
    });
  }

  pollWorker(poll: WorkerPoll): Promise<Result<WorkerPollResult>> {
    return this.write(async (db): Promise<Result<WorkerPollResult>> => {
      // 1. The heartbeat, under the worker row's lock: one poll of a worker at a time.
      // One statement both locks the row and records the poll (a round trip fewer per poll).
      const [w] = await db.all(
        "UPDATE workers SET labels = ?, agents = ?, max_runs = ?, draining = ?, last_seen_at = ? WHERE worker_id = ? AND revoked_at IS NULL RETURNING *",
        [
          JSON.stringify(poll.labels),
          JSON.stringify(poll.agents ?? []),
          poll.maxRuns,
          poll.draining,
          poll.nowMs,
          poll.workerId,
        ],
      );
      if (!w) {
        const [known] = await db.all("SELECT revoked_at FROM workers WHERE worker_id = ?", [poll.workerId]);
        return known
          ? fail("worker_revoked", "/workerId", `worker ${poll.workerId} is revoked`)
          : fail("unknown_worker", "/workerId", `no worker ${poll.workerId}`);
      }
      // The worker's claims; their facts (started, terminal) read only for those a step judges.
      const claims = new Map((await claimIdsOf(db, poll.workerId)).map((r) => [r.run_id as string, r]));
      const held = new Set(poll.held);
      const judged = [...claims.keys()].filter(
        (id) => !held.has(id) || poll.exited.some((e) => e.runId === id) || poll.released.includes(id),
      );
      for (const row of await factsOf(db, judged)) claims.set(row.run_id as string, row);
      /** Still this worker's once the steps are done: what `lost` and its active count are judged by. */
      const mine = new Set(claims.keys());
      // 2. Exits: the runner's terminal ends the dispatch; an exit before any event counts as a lost attempt.
      for (const e of poll.exited) {
        const row = claims.get(e.runId);
        if (!row) continue;
        claims.delete(e.runId);
        const exit = exitText(e.exitCode, e.signal);
        if (truthy(row.terminal)) await end(db, row, null, null);
        else if (!truthy(row.started))
          await takeBack(db, row, poll.nowMs, poll.maxAttempts, END_REASON.runnerExited, DETAIL.exitedUnstarted(exit));
        else await end(db, row, END_REASON.runnerExited, DETAIL.exitedStarted(exit));
        mine.delete(e.runId);
      }
      // 3. Releases: given back unstarted, requeued without counting the attempt.
      for (const runId of poll.released) {
        const row = claims.get(runId);
        if (!row || truthy(row.started)) continue;
        claims.delete(runId);
        mine.delete(runId);
        await release(db, row, poll.nowMs);
      }
      // 4. A retry of this request hands out what it claimed, and claims nothing new.
      let handed = [...claims.values()].filter((r) => r.claim_request_id === poll.requestId).sort(claimOrder);
      const claimedNow: string[] = [];
      if (handed.length === 0) {
        // 5. Reconcile: a claim the worker does not run is taken back (a started one is left to its lease).
        for (const row of claims.values())
          if (!held.has(row.run_id as string)) {
            await takeBack(db, row, poll.nowMs, poll.maxAttempts, END_REASON.workerLost, DETAIL.notHeld);
            if (!truthy(row.started)) mine.delete(row.run_id as string);
          }
        // 6. New claims.
        const room = poll.draining ? 0 : Math.min(poll.want, poll.maxRuns - poll.held.length);
        handed = await claim(db, poll, room);
        for (const row of handed) {
          mine.add(row.run_id as string);
          claimedNow.push(row.run_id as string);
        }
      }
      // 7. A fresh ticket for each run handed out, in this transaction.
      const out: Claim[] = [];
      for (const row of handed) out.push(await handOut(db, row, poll));
      // 8. What the worker runs that is no longer its own.
      const lost = poll.held.filter((runId) => !mine.has(runId));
      const worker = workerFrom({ ...w, active_runs: mine.size });
      return ok({ worker, claims: out, lost, claimedNow });
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
        for (const row of await claimsOf(db, w.worker_id as string, true))
          if (await sweepClaim(db, row, nowMs, maxAttempts, detail)) changed.push(row.run_id as string);
      }
      // A claim by hand gets no exit report: its committed terminal is what ends it.
      const byHand = await db.all(
        `${FACTS} WHERE d.state = 'claimed' AND d.worker_id IS NULL ORDER BY d.run_id${db.forUpdate("d", true)}`,
      );
      for (const row of byHand)
        if (truthy(row.terminal)) {
          await end(db, row, null, null);
          changed.push(row.run_id as string);
        }
      return rowsIn(db, changed);
    });
  }

  cancelQueued(runId: string, nowMs: number): Promise<Result<{ cancelled: boolean; dispatch: DispatchRow }>> {
    return this.write(async (db): Promise<Result<{ cancelled: boolean; dispatch: DispatchRow }>> => {
      const [row] = await db.all(`${FACTS} WHERE d.run_id = ?${db.forUpdate("d")}`, [runId]);
      if (!row) return fail("not_queued", "/runId", `run ${runId} was not queued (not created through the API)`);
      if (row.state === "ended") return fail("run_ended", "/runId", `run ${runId}'s dispatch has ended`);
      if (row.state === "claimed") return ok({ cancelled: false, dispatch: dispatchFrom(row) });
      await end(db, row, END_REASON.cancelled, DETAIL.cancelled);
      await revokeRun(db, runId, nowMs);
      return ok({ cancelled: true, dispatch: (await rowsIn(db, [runId]))[0]! });
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
      return ok((await rowsIn(db, [runId]))[0]!);
    });
  }

  dispatch(runIds: readonly string[]): Promise<DispatchRow[]> {
    return this.read((db) => rowsIn(db, runIds));
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
        out.push({ scope: c.scope as string, max: Number(c.max), active: await active(db, c.scope as string) });
      return out;
    });
  }
}

/** The order claims are made in (priority, then submit time): a retry hands them out in it again. */
const claimOrder = (a: Row, b: Row): number =>
  Number(b.priority) - Number(a.priority) ||
  Number(a.queued_at) - Number(b.queued_at) ||
  String(a.run_id).localeCompare(String(b.run_id));
