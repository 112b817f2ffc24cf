import type pg from "pg";
import { StateError } from "../storage/private-sqlite.js";

/**
 * The PostgreSQL store's schema as versioned migrations: applied in order, each once, all
 * pending ones in one transaction under an advisory lock, so that authority instances starting
 * together on one database migrate it once. A database that records a version this code does
 * not know (a newer release wrote it) is refused rather than used.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "authority store: runs, credentials, commands, window, run log, diagnostics",
    sql: `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY,
  runner_instance_id TEXT NOT NULL, environment_lease_id TEXT NOT NULL, normalized_session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL, item_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  acked_source_seq BIGINT NOT NULL DEFAULT 0,
  connection_count BIGINT NOT NULL DEFAULT 0,
  current_connection_id TEXT,
  revocation_epoch BIGINT NOT NULL DEFAULT 0,
  replay_deliveries BIGINT NOT NULL DEFAULT 0,
  duplicate_command_results BIGINT NOT NULL DEFAULT 0,
  fresh_bootstraps BIGINT NOT NULL DEFAULT 0,
  malformed_frames BIGINT NOT NULL DEFAULT 0,
  last_lease_id TEXT,
  last_lease_expires_at BIGINT,
  created_at BIGINT NOT NULL);
CREATE TABLE credentials (
  credential_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('bootstrap', 'lease')),
  auth_key_digest TEXT NOT NULL,
  issued_at BIGINT NOT NULL, expires_at BIGINT NOT NULL,
  used_at BIGINT, revoked_at BIGINT,
  lease_id TEXT UNIQUE,
  revocation_epoch BIGINT NOT NULL,
  protocol_version INTEGER);
CREATE INDEX credentials_by_run ON credentials (run_id);
CREATE TABLE lease_renewals (
  credential_id TEXT PRIMARY KEY REFERENCES credentials (credential_id) ON DELETE CASCADE,
  previous_expires_at BIGINT NOT NULL,
  renewals BIGINT NOT NULL,
  renewed_at BIGINT NOT NULL);
CREATE TABLE commands (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  controller_seq INTEGER NOT NULL, command_id TEXT NOT NULL, command_type TEXT NOT NULL,
  payload TEXT NOT NULL, envelope TEXT NOT NULL, queued_at BIGINT NOT NULL,
  delivery_count BIGINT NOT NULL DEFAULT 0, last_delivered_connection_id TEXT, last_delivered_at BIGINT,
  status TEXT, result TEXT, result_at BIGINT,
  PRIMARY KEY (run_id, controller_seq), UNIQUE (run_id, command_id));
CREATE TABLE committed_events (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  source_seq BIGINT NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  priority INTEGER NOT NULL, envelope TEXT NOT NULL, delivery_count BIGINT NOT NULL, committed_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, source_seq), UNIQUE (run_id, source_event_id));
CREATE TABLE event_log (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  source_seq BIGINT NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  priority INTEGER NOT NULL, envelope TEXT NOT NULL, committed_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, source_seq));
CREATE TABLE diagnostics (
  id BIGSERIAL PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  code TEXT NOT NULL, message TEXT NOT NULL, at BIGINT NOT NULL);
CREATE INDEX diagnostics_by_run ON diagnostics (run_id, id);
CREATE TABLE auth_failures (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  code TEXT NOT NULL,
  count BIGINT NOT NULL,
  first_id BIGINT NOT NULL, latest_id BIGINT NOT NULL,
  PRIMARY KEY (run_id, code));
`,
  },
  {
    version: 2,
    name: "runner connections: each admitted connection with the build its runner reported (contract digest)",
    sql: `
CREATE TABLE runner_connections (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  connection_number BIGINT NOT NULL,
  connected_at BIGINT NOT NULL,
  protocol_version INTEGER NOT NULL,
  runner_version TEXT, runner_digest TEXT, contract_digest TEXT,
  PRIMARY KEY (run_id, connection_number));
`,
  },
];

/** Any constant both instances agree on: the key of the advisory lock migrations hold. */
const MIGRATION_LOCK = 0x70727061; // "prpa"

/** Applies the pending migrations in one transaction; returns the versions it applied. */
export async function migrate(
  client: pg.ClientBase,
  location: string,
  nowMs: number,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    );
    const rows = (await client.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version"))
      .rows;
    const applied = new Set(rows.map((r) => r.version));
    const known = new Set(migrations.map((m) => m.version));
    const unknown = rows.find((r) => !known.has(r.version));
    if (unknown)
      throw new StateError(
        "state_unknown_schema",
        location,
        `the database records schema migration ${unknown.version}, which this version does not know: it was written by a newer release`,
      );
    const done: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (applied.has(m.version)) continue;
      await client.query(m.sql);
      await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
        m.version,
        m.name,
        nowMs,
      ]);
      done.push(m.version);
    }
    await client.query("COMMIT");
    return done;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  }
}
