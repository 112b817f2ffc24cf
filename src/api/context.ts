import type { ApiTokenRow, AuthorityStore } from "../authority/store.js";
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
  "run" | "runCursor" | "runSpec" | "listRuns" | "dispatch" | "eventLog" | "command" | "commands" | "apiToken"
>;

/**
 * Where the writing routes (create a run, queue a command, issue a ticket) go: the authority's
 * store, or a refusal for every write (a read-only source, e.g. `prp console --replay`).
 */
export type ApiWrites = { store: AuthorityStore } | { refused: { code: string; message: string } };

/** How a request's `Authorization` header is checked: the token it presents, or a refusal. */
export type Authenticate = (authorization: string | undefined, nowMs: number) => Promise<Result<ApiTokenRow>>;

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
