import type { AuthorityStore } from "../authority/store.js";
import type { EventFeed } from "./event-feed.js";
import type { ApiLimits } from "./limits.js";

/** What every route handler works with. */
export interface ApiContext {
  store: AuthorityStore;
  feed: EventFeed;
  limits: ApiLimits;
  /** The authority's runner base URL (ws:// or wss://), for the tickets' connect URL. */
  runnerConnectUrl: string;
  now: () => number;
}
