import type { DispatchRow, WorkerRow } from "../authority/store.js";
import { waitReason, workerLive, type QueueFacts } from "../authority/wait-reason.js";
import type { ApiContext } from "./context.js";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** API_SCHEMAS.Dispatch of a run's dispatch row; `facts` says why a queued one waits. */
export function dispatchBody(row: DispatchRow, facts: QueueFacts | null) {
  return {
    state: row.state,
    attempts: row.attempts,
    workerId: row.workerId,
    queuedAt: new Date(row.queuedAtUnixMs).toISOString(),
    claimedAt: iso(row.claimedAtUnixMs),
    endedAt: iso(row.endedAtUnixMs),
    endReason: row.endReason,
    endDetail: row.endDetail,
    waiting: row.state === "queued" && facts ? waitReason(row.labels, facts) : null,
  };
}

/** The caps and workers a queued run's reason is judged from; read once per request, and only when needed. */
export async function queueFacts(
  ctx: Pick<ApiContext, "store" | "dispatch" | "now">,
  rows: ReadonlyArray<DispatchRow | null>,
): Promise<QueueFacts | null> {
  if (!rows.some((r) => r?.state === "queued")) return null;
  const [caps, workers] = await Promise.all([ctx.store.caps(), ctx.store.workers()]);
  return { caps, workers, nowMs: ctx.now(), graceMs: ctx.dispatch.graceMs };
}

/** API_SCHEMAS.Worker. */
export function workerBody(w: WorkerRow, nowMs: number, graceMs: number) {
  const health =
    w.revokedAtUnixMs !== null
      ? "revoked"
      : w.lastSeenAtUnixMs === null
        ? "never_seen"
        : workerLive({ ...w, draining: false }, nowMs, graceMs)
          ? "live"
          : "silent";
  return {
    workerId: w.workerId,
    name: w.name,
    labels: w.labels,
    agents: w.agents,
    maxRuns: w.maxRuns,
    activeRuns: w.activeRuns,
    draining: w.draining,
    lastSeenAt: iso(w.lastSeenAtUnixMs),
    health,
    revoked: w.revokedAtUnixMs !== null,
  };
}
