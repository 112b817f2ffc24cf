/** The bounds of the API port: each an option of ApiServer.start, these the defaults. */
export interface ApiLimits {
  /** The largest request body, in bytes. */
  bodyLimit: number;
  /** Open connections at once; more are refused by the socket server. */
  maxConnections: number;
  /** The whole request (headers and body) must arrive within this. */
  requestTimeoutMs: number;
  /** The headers must arrive within this (slowloris). */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Requests per token per `rateWindowMs`. */
  rateMax: number;
  rateWindowMs: number;
  /** A follower's socket may hold this many unsent bytes; past it the stream is closed (it resumes by Last-Event-ID). */
  followerBufferBytes: number;
  /** How often the live feed reads the followed runs' cursors. */
  feedPollMs: number;
  /** How often an idle event stream sends a keep-alive comment. */
  keepAliveCommentMs: number;
}

export const DEFAULT_API_LIMITS: ApiLimits = {
  bodyLimit: 1024 * 1024,
  maxConnections: 256,
  requestTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  rateMax: 600,
  rateWindowMs: 60_000,
  followerBufferBytes: 4 * 1024 * 1024,
  feedPollMs: 50,
  keepAliveCommentMs: 15_000,
};

/** Events one page may hold (`?limit=`). */
export const MAX_EVENT_PAGE = 1000;
/** Runs one list page may hold. */
export const MAX_RUN_PAGE = 500;
