/** The transport numbers of runtime.md §15.1 that are not frame sizes (those are in secure-frame.ts). */

/** HTTP upgrade request (server) and response (client) headers. */
export const MAX_UPGRADE_HEADER_BYTES = 16 * 1024;
/** Each handshake message, read or written. */
export const AUTH_MESSAGE_TIMEOUT_MS = 2_000;
/** One dial attempt, and all attempts together. */
export const CONNECT_ATTEMPT_MS = 3_000;
export const CONNECT_TOTAL_MS = 10_000;
/** The server keeps a pending challenge at most this long (and never past the credential's expiry). */
export const CHALLENGE_TTL_MS = 5_000;
/** Fixed welcome values (§5.3 step 8). */
export const HEARTBEAT_INTERVAL_MS = 250;
export const MAX_BATCH_EVENTS = 100;
/** The lease renewal the welcome advertises and a runner knows (§5.9 "Lease renewal"). */
export const LEASE_RENEWAL_VERSION = 1;
/**
 * A peer silent for this many heartbeat intervals, and never less than the floor, is taken for
 * dead: generous, so that a loaded machine does not drop a connection that is merely slow.
 */
export const DEAD_PEER_INTERVALS = 20;
export const DEAD_PEER_FLOOR_MS = 5_000;
