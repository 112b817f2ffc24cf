/** The transport numbers of runtime.md §15.1 that are not frame sizes (those are in secure-frame.ts). */

/** HTTP upgrade request (server) and response (client) headers. */
export const MAX_UPGRADE_HEADER_BYTES = 16 * 1024;
/**
 * Admission of connections by the server; not numbers of the spec, which bounds only each
 * handshake message. The upgrade request must be whole within the headers timeout (Node answers
 * 408), and the welcome sent within the deadline from the TCP accept (four handshake messages
 * of 2 s each fit); sockets not yet authenticated are capped per remote address and in total.
 */
export const UPGRADE_HEADERS_TIMEOUT_MS = 5_000;
export const HANDSHAKE_DEADLINE_MS = 10_000;
export const MAX_UNAUTHENTICATED_PER_ADDRESS = 32;
export const MAX_UNAUTHENTICATED = 128;
/** Each handshake message, read or written. */
export const AUTH_MESSAGE_TIMEOUT_MS = 2_000;
/** A peer that has not answered this side's close frame within this is cut off (ws would wait 30 s). */
export const CLOSE_GRACE_MS = 2_000;
/** One dial attempt, and all attempts together. */
export const CONNECT_ATTEMPT_MS = 3_000;
export const CONNECT_TOTAL_MS = 10_000;
/** The server keeps a pending challenge at most this long (and never past the credential's expiry). */
export const CHALLENGE_TTL_MS = 5_000;
/**
 * The heartbeat interval the welcome carries unless the authority is told another (§5.3 step 8).
 * A beat costs the authority a socket write and a read whatever it carries: at 30 s, the beats
 * of 10,000 idle runners cost it under 5% of one core (bench:idle), and a peer that stopped answering
 * (a hung process; a dead one's socket closes at once) is closed after 90 s. The bounds keep a
 * setting sane; a small fleet can afford a shorter one.
 */
export const HEARTBEAT_INTERVAL_MS = 30_000;
export const MIN_HEARTBEAT_INTERVAL_MS = 100;
export const MAX_HEARTBEAT_INTERVAL_MS = 60_000;
/** A fixed welcome value (§5.3 step 8). */
export const MAX_BATCH_EVENTS = 100;
/** The lease renewal the welcome advertises and a runner knows (§5.9 "Lease renewal"). */
export const LEASE_RENEWAL_VERSION = 1;
/**
 * A peer that missed this many beats in a row (silent longer than this many intervals) is taken
 * for dead; the heartbeat judges it only at two ticks in a row, so it is noticed within two more
 * intervals. Three, not one: a beat delayed by a loaded machine must not drop a live connection.
 */
export const DEAD_PEER_MISSED_BEATS = 3;
