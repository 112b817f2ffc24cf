import type Database from "better-sqlite3";
import { StateError } from "../../storage/private-sqlite.js";
import { STORE_SCHEMA } from "../limits.js";
import { MIGRATIONS, MIGRATIONS_TABLE, pendingMigrations, type Migration } from "../migrations/list.js";

/**
 * Applies the pending migrations; returns the versions it applied. The caller holds the write
 * lock (BEGIN IMMEDIATE) around it and the store's open checks, so that two processes opening
 * one new file migrate it once and a failing migration leaves nothing applied.
 */
export function migrateSqlite(
  db: Database.Database,
  location: string,
  nowMs: number,
  migrations: readonly Migration[] = MIGRATIONS,
): number[] {
  const recorded = recordedVersions(db);
  const done: number[] = [];
  for (const m of pendingMigrations(recorded, location, migrations)) {
    db.exec(m.sqlite);
    db.prepare(`INSERT INTO ${MIGRATIONS_TABLE} (version, name, applied_at) VALUES (?, ?, ?)`).run(
      m.version,
      m.name,
      nowMs,
    );
    done.push(m.version);
  }
  const marker = db.prepare("SELECT value FROM meta WHERE key = 'schema'").pluck().get() as string | undefined;
  if (marker !== STORE_SCHEMA)
    throw new StateError("state_unknown_schema", location, `the store records schema ${marker}, not ${STORE_SCHEMA}`);
  return done;
}

/**
 * The versions the store records. Stores written before versions were recorded carry only the
 * `meta` schema marker, and every open of theirs created any missing table: such a store is at
 * version 1, and at version 2 once it has runner_connections.
 */
function recordedVersions(db: Database.Database): number[] {
  const has = (table: string): boolean =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
  const unrecorded = !has(MIGRATIONS_TABLE);
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
  );
  if (unrecorded && has("meta")) {
    const before = MIGRATIONS.filter((m) => m.version === 1 || (m.version === 2 && has("runner_connections")));
    for (const m of before)
      db.prepare(`INSERT INTO ${MIGRATIONS_TABLE} (version, name, applied_at) VALUES (?, ?, 0)`).run(m.version, m.name);
  }
  return db.prepare(`SELECT version FROM ${MIGRATIONS_TABLE}`).pluck().all() as number[];
}
