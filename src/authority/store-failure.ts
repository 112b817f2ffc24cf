import { authorityError, type AuthorityError } from "./errors.js";

/** SQLSTATEs (PostgreSQL) and result codes (SQLite) that name why a write could not be made. */
const READ_ONLY = new Set([
  "25006",
  "SQLITE_READONLY",
  "SQLITE_READONLY_DBMOVED",
  "SQLITE_READONLY_DIRECTORY",
  "SQLITE_READONLY_RECOVERY",
  "SQLITE_READONLY_ROLLBACK",
  "SQLITE_READONLY_CANTLOCK",
  "SQLITE_READONLY_CANTINIT",
]);
const FULL = new Set(["53100", "SQLITE_FULL"]);

/**
 * A store call that failed (it rejected: the database unreachable, read-only or full) as the
 * typed refusal the authority answers with. Nothing was committed by the failed call; the
 * runner keeps the event in its outbox and resends it once the store is back.
 */
export function storeFailure(err: unknown): AuthorityError {
  const detail = (err as Error)?.message ?? String(err);
  const kind = storeFailureKind(err);
  if (kind === "read_only")
    return authorityError(
      "store_read_only",
      "",
      `the store refuses writes (${detail}): nothing was committed; resend when it is writable`,
    );
  if (kind === "full") return authorityError("store_full", "", `the store is full (${detail}): nothing was committed`);
  return authorityError(
    "store_unavailable",
    "",
    `the store could not be used (${detail}): nothing was committed; resend when it is back`,
  );
}

/** Why a store call failed, by the driver's code (SQLite result code or PostgreSQL SQLSTATE). */
export function storeFailureKind(err: unknown): "read_only" | "full" | "unavailable" {
  const code = driverCode(err) ?? "";
  return READ_ONLY.has(code) ? "read_only" : FULL.has(code) ? "full" : "unavailable";
}

/**
 * The code a database driver put on its error (better-sqlite3: `SQLITE_…`; pg: a five-character
 * SQLSTATE), or undefined for any other error, a bug rather than the store's refusal.
 */
export function driverCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== "string") return undefined;
  return code.startsWith("SQLITE_") || /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}
