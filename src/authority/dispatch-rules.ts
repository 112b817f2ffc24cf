import { fail, ok, type Result } from "./errors.js";

/**
 * The run queue's rules that need no database (design of issue 28): which worker may claim a
 * run, which caps a claim counts against, and what an ended dispatch tells a person.
 */

/** The label a run names its agent by: a worker advertising agents holds `agent=<name>` for each. */
export const AGENT_LABEL = "agent";

/** What a worker offers a run: its labels, and the agent profiles it advertises (labels hold one value each). */
export interface HeldLabels {
  labels: Record<string, string>;
  agents?: readonly string[];
}

/** The worker holds the pair `key=value`: as its label, or as `agent=<name>` of an agent it advertises. */
export const holds = (worker: HeldLabels, key: string, value: string): boolean =>
  (Object.hasOwn(worker.labels, key) && worker.labels[key] === value) ||
  (key === AGENT_LABEL && (worker.agents ?? []).includes(value));

/** Every `key=value` pair a worker holds: the one list a claim's SQL filters by. */
export const heldPairs = (worker: HeldLabels): string[] => [
  ...Object.entries(worker.labels).map(([key, value]) => `${key}=${value}`),
  ...(worker.agents ?? []).map((name) => `${AGENT_LABEL}=${name}`),
];

/** Every label of the run is held, with the same value, by the worker. */
export const labelsMatch = (run: Record<string, string>, worker: HeldLabels): boolean =>
  Object.entries(run).every(([key, value]) => holds(worker, key, value));

/** The cap scopes a claim of a run with these labels holds a slot of: `*` and each `key=value`. */
export const capScopes = (labels: Record<string, string>): string[] =>
  ["*", ...Object.entries(labels).map(([key, value]) => `${key}=${value}`)].sort();

/** A cap's scope: `*` or `key=value` with a key. */
export function checkCap(scope: string, max: number | null): Result<void> {
  if (scope !== "*" && !/^[^=]+=.*$/s.test(scope))
    return fail("invalid_request", "/scope", "a cap's scope is * or key=value");
  if (max !== null && (!Number.isSafeInteger(max) || max < 0))
    return fail("invalid_request", "/max", "a cap's max is an integer ≥ 0");
  return ok(undefined);
}

/** How a runner ended, for a person: `exit 3` or `signal SIGKILL`. */
export const exitText = (exitCode: number | null, signal: string | null): string =>
  signal !== null ? `signal ${signal}` : `exit ${exitCode ?? "unknown"}`;

export const END_REASON = {
  cancelled: "cancelled",
  workerLost: "worker_lost",
  runnerExited: "runner_exited",
} as const;

export const DETAIL = {
  exitedUnstarted: (exit: string) => `${exit} before any event`,
  exitedStarted: (exit: string) => `${exit} before the run's terminal`,
  notHeld: "its worker no longer runs it",
  silent: (name: string, sinceMs: number | null) =>
    `worker ${name} silent since ${sinceMs === null ? "its registration" : new Date(sinceMs).toISOString()}`,
  revoked: (name: string) => `worker ${name} revoked`,
  runnerGone: "its worker and its runner are gone (lease expired)",
  cancelled: "cancelled while queued",
} as const;

/** The claim order: priority DESC, then submit time, then run id. */
export const CLAIM_ORDER = "d.priority DESC, d.queued_at, d.run_id";

/** How many candidates one claim query reads: enough to skip over capped or unmatched runs. */
export const candidateBatch = (want: number): number => want * 4 + 16;
