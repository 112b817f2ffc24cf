import { capScopes, holds, labelsMatch } from "./dispatch-rules.js";
import type { CapUsage, WorkerRow } from "./store.js";

/** What a queued run's wait depends on: the caps with their use, the workers, and what "live" means. */
export interface QueueFacts {
  caps: readonly CapUsage[];
  workers: readonly WorkerRow[];
  nowMs: number;
  graceMs: number;
}

/** A worker that may claim now: seen within the grace, not revoked, not draining. */
export const workerLive = (w: WorkerRow, nowMs: number, graceMs: number): boolean =>
  w.revokedAtUnixMs === null && !w.draining && w.lastSeenAtUnixMs !== null && w.lastSeenAtUnixMs >= nowMs - graceMs;

/**
 * Why a queued run waits, for a person: the first thing that stops a claim, in the order a
 * claim checks them. A full cap ("cap agent=claude 4/4"), no live worker holding its labels
 * ("no worker with os=linux"), every such worker busy; else it is next for a worker's poll.
 */
export function waitReason(labels: Record<string, string>, facts: QueueFacts): string {
  // The same scopes and label rule a claim checks (dispatch-rules.ts).
  const scopes = new Set(capScopes(labels));
  for (const cap of facts.caps) {
    if (scopes.has(cap.scope) && cap.active >= cap.max)
      return cap.scope === "*"
        ? `cap (all runs) ${cap.active}/${cap.max}`
        : `cap ${cap.scope} ${cap.active}/${cap.max}`;
  }
  const live = facts.workers.filter((w) => workerLive(w, facts.nowMs, facts.graceMs));
  if (live.length === 0) return facts.workers.length === 0 ? "no worker registered" : "no live worker";
  const matching = live.filter((w) => labelsMatch(labels, w));
  if (matching.length === 0) {
    const missing = Object.entries(labels).filter(([k, v]) => !live.some((w) => holds(w, k, v)));
    const wanted = (missing.length > 0 ? missing : Object.entries(labels)).map(([k, v]) => `${k}=${v}`);
    return `no worker with ${wanted.join(",")}`;
  }
  const busy = matching.reduce((n, w) => n + w.activeRuns, 0);
  const capacity = matching.reduce((n, w) => n + w.maxRuns, 0);
  if (busy >= capacity)
    return `every matching worker is busy (${matching.length} worker${matching.length === 1 ? "" : "s"}, ${busy}/${capacity} runs)`;
  return "waiting for a worker's next poll";
}
