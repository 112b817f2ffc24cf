import type pg from "pg";
import { MIGRATIONS, MIGRATIONS_TABLE, pendingMigrations, type Migration } from "../migrations/list.js";

/** Any constant both instances agree on: the key of the advisory lock migrations hold. */
const MIGRATION_LOCK = 0x70727061; // "prpa"

/**
 * Applies the pending migrations in one transaction under an advisory lock, so that instances
 * starting together on one database migrate it once; returns the versions it applied. A failing
 * migration rolls back every one of them.
 */
export async function migratePostgres(
  client: pg.ClientBase,
  location: string,
  nowMs: number,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
    );
    const recorded = (await client.query<{ version: number }>(`SELECT version FROM ${MIGRATIONS_TABLE}`)).rows;
    const done: number[] = [];
    for (const m of pendingMigrations(
      recorded.map((r) => r.version),
      location,
      migrations,
    )) {
      await client.query(m.postgres);
      await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (version, name, applied_at) VALUES ($1, $2, $3)`, [
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
