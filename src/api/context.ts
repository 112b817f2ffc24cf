import type { ApiTokenRow, AuthorityStore, WorkerRow } from "../authority/store.js";
import type { Result } from "../authority/errors.js";
import { ApiError } from "./errors.js";
import type { EventFeed } from "./event-feed.js";
import type { FactsCache, SessionCache } from "./run-view.js";
import type { ApiLimits } from "./limits.js";

/**
 * What the API's reading routes use of a store: a run's state, spec, events and commands, and
 * the tokens. A store that cannot be written (a replayed file) can serve these.
 */
export type ApiStore = Pick<
  AuthorityStore,
  | "run"
  | "runCursor"
  | "runSpec"
  | "listRuns"
  | "eventLog"
  | "command"
  | "commands"
  | "apiToken"
  | "dispatch"
  | "caps"
  | "workers"
>;

/**
 * Where the writing routes (create a run, queue a command, issue a ticket) go: the authority's
 * store, or a refusal for every write (a read-only source, e.g. `prp console --replay`).
 */
export type ApiWrites = { store: AuthorityStore } | { refused: { code: string; message: string } };

/** How a request's `Authorization` header is checked: the token it presents, or a refusal. */
export type Authenticate = (authorization: string | undefined, nowMs: number) => Promise<Result<ApiTokenRow>>;

/** How a worker's credential is checked (the worker's route only). */
export type AuthenticateWorker = (authorization: string | undefined) => Promise<Result<WorkerRow>>;

/** The run queue's timing, the same for every authority instance on one store. */
export interface DispatchSettings {
  /** A worker polls at least this often. */
  heartbeatMs: number;
  /** Silent longer than this, a worker loses its claims. */
  graceMs: number;
  /** Claims a run may lose (worker lost, runner gone before any event) before it ends `worker_lost`. */
  maxAttempts: number;
}

/** What every route handler works with. */
export interface ApiContext {
  store: ApiStore;
  writes: ApiWrites;
  feed: EventFeed;
  /** The reduced sessions of recently asked runs: GET /v1/runs/{runId} and the answer checks. */
  sessions: SessionCache;
  /** The facts of recently listed or asked runs (run-facts.ts). */
  facts: FactsCache;
  limits: ApiLimits;
  /** The authority's runner base URL (ws:// or wss://), for the tickets' connect URL. */
  runnerConnectUrl: string;
  now: () => number;
  /** A command was queued: the authority in this process may deliver it now, not at its next poll. */
  commandQueued: (runId: string) => void;
  /** A poll claimed a run that had waited this long in the queue (counted once per claim). */
  runClaimed: (waitedMs: number) => void;
  dispatch: DispatchSettings;
  /** Wakes the workers' held polls: a run was queued or a slot freed in this process. */
  queue: QueueWake;
}

/**
 * The workers' long polls wait on this; a run queued (or requeued, or a slot freed) in this
 * process wakes them at once. Another instance's queue is seen at the poll's next tick.
 */
export class QueueWake {
  private waiters = new Set<() => void>();

  wake(): void {
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const w of waiters) w();
  }

  /** Resolves at the next wake or after `ms`, whichever is first; `signal` ends it early too. */
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }
}

/** Why a write is refused here (a read-only source), as the error to throw. */
export const writeRefusal = (ctx: Pick<ApiContext, "writes">): ApiError =>
  "refused" in ctx.writes
    ? new ApiError(ctx.writes.refused.code, ctx.writes.refused.message)
    : new ApiError("internal_error", "this API has a store to write to");

/** The store a write goes to, or the refusal of writes here (thrown). */
export function writableStore(ctx: Pick<ApiContext, "writes">): AuthorityStore {
  if ("refused" in ctx.writes) throw writeRefusal(ctx);
  return ctx.writes.store;
}
