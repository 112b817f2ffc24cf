import type { AuthorityStore } from "../authority/store.js";
import type { EventFeed } from "./event-feed.js";
import type { SessionCache } from "./run-view.js";
import type { ApiLimits } from "./limits.js";

/** What every route handler works with. */
export interface ApiContext {
  store: AuthorityStore;
  feed: EventFeed;
  /** The reduced sessions of recently asked runs: GET /v1/runs/{runId} and the answer checks. */
  sessions: SessionCache;
  limits: ApiLimits;
  /** The authority's runner base URL (ws:// or wss://), for the tickets' connect URL. */
  runnerConnectUrl: string;
  now: () => number;
  /** A command was queued: the authority in this process may deliver it now, not at its next poll. */
  commandQueued: (runId: string) => void;
}
