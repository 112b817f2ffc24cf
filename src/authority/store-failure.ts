import { authorityError, type AuthorityError } from "./errors.js";

/** SQLSTATEs (PostgreSQL) and result codes (SQLite) that name why a write could not be made. */
const READ_ONLY = new Set(["25006", "SQLITE_READONLY", "SQLITE_READONLY_DBMOVED", "SQLITE_READONLY_DIRECTORY", "SQLITE_READONLY_RECOVERY", "SQLITE_READONLY_ROLLBACK", "SQLITE_READONLY_CANTLOCK", "SQLITE_READONLY_CANTINIT"]);
const FULL = new Set(["53100", "SQLITE_FULL"]);

/**
 * A store call that failed (it rejected: the database unreachable, read-only or full) as the
 * typed refusal the authority answers with. Nothing was committed by the failed call; the
 * runner keeps the event in its outbox and resends it once the store is back.
 */
export function storeFailure(err: unknown): AuthorityError {
  const code = typeof (err as { code?: unknown })?.code === "string" ? (err as { code: string }).code : "";
  const detail = (err as Error)?.message ?? String(err);
  if (READ_ONLY.has(code)) return authorityError("store_read_only", "", `the store refuses writes (${detail}): nothing was committed; resend when it is writable`);
  if (FULL.has(code)) return authorityError("store_full", "", `the store is full (${detail}): nothing was committed`);
  return authorityError("store_unavailable", "", `the store could not be used (${detail}): nothing was committed; resend when it is back`);
}
