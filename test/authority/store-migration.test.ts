import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { STORE_FILE } from "../../src/authority/limits.js";
import { MIGRATIONS } from "../../src/authority/migrations/list.js";
import { migratePostgres } from "../../src/authority/postgres/migrate.js";
import { PostgresAuthorityStore } from "../../src/authority/postgres-store.js";
import { migrateSqlite } from "../../src/authority/sqlite/migrate.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { StateError } from "../../src/storage/private-sqlite.js";
import { startTestPostgres, withPgClient, type TestPostgres } from "../support/postgres.js";
import {
  FIXTURE_COMMAND,
  FIXTURE_EVENTS,
  FIXTURE_LEASE,
  FIXTURE_SERVER_KEY,
  FIXTURE_TICKET,
  fixtureEnvelope,
  fixtureIdentity,
} from "../support/store-fixture.js";
import { tempRoot } from "./support.js";

// Written by the code of schema version 2 (store-fixture.ts), before the migrations were one list.
const fixture = (dialect: "sqlite" | "postgres"): string =>
  readFileSync(new URL(`../../../test/authority/fixtures/store-v1.${dialect}.sql`, import.meta.url), "utf8");

const serverKey = FIXTURE_SERVER_KEY;
const latest = Math.max(...MIGRATIONS.map((m) => m.version));
const runId = fixtureIdentity.runId;

/** What the fixture wrote, read back through the store API. */
async function assertFixtureIntact(store: AuthorityStore): Promise<void> {
  const run = await store.run(runId);
  assert.ok(run, "the run is there");
  assert.deepEqual(run.identity, fixtureIdentity);
  assert.equal(run.ackedSourceSeq, FIXTURE_EVENTS);
  assert.equal(run.commandCount, 1);
  assert.equal(run.currentConnectionId, "connection_1");
  const log = await store.eventLog(runId, 0, 10);
  assert.deepEqual(
    log.map((e) => [e.sourceSeq, e.sourceEventId, e.envelope]),
    [1, 2, 3].map((seq) => [seq, `event_fixture_${seq}`, fixtureEnvelope(seq)]),
  );
  assert.equal((await store.committedWindow(runId)).length, FIXTURE_EVENTS);
  const command = await store.command(runId, FIXTURE_COMMAND);
  assert.equal(command?.status, "completed");
  assert.equal(command?.deliveryCount, 1);
  const lease = await store.credential(FIXTURE_LEASE);
  assert.equal(lease?.kind, "lease");
  assert.equal(lease?.authKeyDigest, `sha256:${"b2".repeat(32)}`, "the sealed auth key opens under the same key");
  assert.notEqual((await store.credential(FIXTURE_TICKET))?.usedAtUnixMs, null);
  assert.deepEqual(await store.diagnostics(runId), [{ code: "fixture_note", message: "a diagnostic" }]);
  assert.equal((await store.runnerConnections(runId)).length, 1);
}

const isNewerRefusal = (err: unknown): boolean =>
  err instanceof StateError &&
  err.code === "state_unknown_schema" &&
  err.message.includes(`schema version ${latest + 1}`) &&
  err.message.includes(`up to ${latest}`) &&
  err.message.includes("newer release");

describe("authority store migrations (SQLite)", () => {
  const tmp = tempRoot("prp-store-migration-");
  after(tmp.cleanup);

  /** A store directory holding the fixture, as the code before recorded versions left it. */
  const fromFixture = (): string => {
    const dir = tmp.dir();
    mkdirSync(dir, { mode: 0o700 });
    const path = join(dir, STORE_FILE);
    const db = new Database(path);
    db.exec(fixture("sqlite"));
    db.close();
    chmodSync(path, 0o600);
    return dir;
  };
  const versions = (dir: string): number[] => {
    const db = new Database(join(dir, STORE_FILE), { readonly: true });
    try {
      return db.prepare("SELECT version FROM schema_migrations ORDER BY version").pluck().all() as number[];
    } finally {
      db.close();
    }
  };

  it("opens a store of the earlier format with its run, events, command and credentials intact", async () => {
    const dir = fromFixture();
    const store = SqliteAuthorityStore.open(dir, { serverKey });
    await assertFixtureIntact(store);
    await store.close();
    assert.deepEqual(
      versions(dir),
      MIGRATIONS.map((m) => m.version),
    );
  });

  it("applies nothing twice: a reopen and a second migrate are no-ops", async () => {
    const dir = fromFixture();
    await SqliteAuthorityStore.open(dir, { serverKey }).close();
    const store = SqliteAuthorityStore.open(dir, { serverKey });
    await assertFixtureIntact(store);
    await store.close();
    const db = new Database(join(dir, STORE_FILE));
    assert.deepEqual(db.transaction(() => migrateSqlite(db, dir, 0)).immediate(), []);
    db.close();
  });

  it("refuses a store a newer release migrated, naming both versions", async () => {
    const dir = fromFixture();
    await SqliteAuthorityStore.open(dir, { serverKey }).close();
    const db = new Database(join(dir, STORE_FILE));
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'later', 0)").run(latest + 1);
    db.close();
    assert.throws(() => SqliteAuthorityStore.open(dir, { serverKey }), isNewerRefusal);
  });

  it("a fresh store and a migrated one end with the same schema", async () => {
    const schema = (dir: string): unknown => {
      const db = new Database(join(dir, STORE_FILE), { readonly: true });
      try {
        const objects = db
          .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
          .all() as Array<Record<string, string | null>>;
        return objects.map((o) => ({
          ...o,
          sql: o.sql?.replace(/\s+/g, " ") ?? null,
          columns: o.type === "table" ? db.pragma(`table_info(${o.name})`) : null,
        }));
      } finally {
        db.close();
      }
    };
    const migrated = fromFixture();
    await SqliteAuthorityStore.open(migrated, { serverKey }).close();
    const fresh = tmp.dir();
    await SqliteAuthorityStore.open(fresh, { serverKey }).close();
    assert.deepEqual(schema(migrated), schema(fresh));
  });
});

describe("authority store migrations (PostgreSQL)", () => {
  let server: TestPostgres;
  before(async () => {
    server = await startTestPostgres();
  });
  after(() => server.stop());

  const fromFixture = async (): Promise<string> => {
    const url = await server.database();
    await withPgClient(url, (c) => c.query(fixture("postgres")));
    return url;
  };

  it("opens a store written before the migrations were shared, intact; a second migrate is a no-op", async () => {
    const url = await fromFixture();
    const store = await PostgresAuthorityStore.open(url, { serverKey });
    await assertFixtureIntact(store);
    await store.close();
    assert.deepEqual(await withPgClient(url, (c) => migratePostgres(c, url, 0)), []);
    const again = await PostgresAuthorityStore.open(url, { serverKey });
    await assertFixtureIntact(again);
    await again.close();
  });

  it("refuses a store a newer release migrated, naming both versions", async () => {
    const url = await fromFixture();
    await withPgClient(url, (c) =>
      c.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'later', 0)", [latest + 1]),
    );
    await assert.rejects(PostgresAuthorityStore.open(url, { serverKey }), isNewerRefusal);
  });

  it("a fresh store and a migrated one end with the same schema", async () => {
    const columns = (url: string) =>
      withPgClient(
        url,
        async (c) =>
          (
            await c.query(
              `SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
               WHERE table_schema = 'public' ORDER BY table_name, column_name`,
            )
          ).rows,
      );
    const indexes = (url: string) =>
      withPgClient(
        url,
        async (c) =>
          (await c.query("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname"))
            .rows,
      );
    const migrated = await fromFixture();
    await (await PostgresAuthorityStore.open(migrated, { serverKey })).close();
    const fresh = await server.database();
    await (await PostgresAuthorityStore.open(fresh, { serverKey })).close();
    assert.deepEqual(await columns(migrated), await columns(fresh));
    assert.deepEqual(await indexes(migrated), await indexes(fresh));
  });
});
