import { join } from "node:path";
import Database from "better-sqlite3";
import { STORE_FILE } from "../../../src/authority/limits.js";
import { SqliteAuthorityStore } from "../../../src/authority/sqlite-store.js";
import { serverKey, tempRoot } from "../support.js";
import { apiPartsConformance } from "./api-parts.js";
import { dispatchPartsConformance } from "./dispatch-parts.js";
import { storeConformance, type OpenedStore, type StoreFactory } from "./contract.js";

const tmp = tempRoot("prp-store-conformance-");

/** Reads the database file apart from the store's code. */
function raw<T>(dir: string, fn: (db: Database.Database) => T): T {
  const db = new Database(join(dir, STORE_FILE));
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const factory: StoreFactory = {
  async open(): Promise<OpenedStore> {
    const dir = tmp.dir();
    return {
      store: SqliteAuthorityStore.open(dir, { serverKey }),
      reopen: async (options = {}) => SqliteAuthorityStore.open(dir, { serverKey, ...options }),
      rawAuthKeys: async () =>
        raw(dir, (db) =>
          (db.prepare("SELECT auth_key_digest FROM credentials").all() as Array<{ auth_key_digest: string }>).map(
            (r) => r.auth_key_digest,
          ),
        ),
      rawRun: async (runId) =>
        raw(dir, (db) => db.prepare("SELECT * FROM runs WHERE run_id = ?").get(runId) as Record<string, unknown>),
      createHostTable: async () =>
        void raw(dir, (db) => db.exec("CREATE TABLE host_events (source_event_id TEXT PRIMARY KEY)")),
      hostInsert: async (tx, id) => {
        if (tx.kind !== "sqlite") throw new Error(`a SQLite store handed a ${tx.kind} transaction`);
        tx.db.prepare("INSERT INTO host_events (source_event_id) VALUES (?)").run(id);
      },
      cursorWithin: async (tx, runId) => {
        if (tx.kind !== "sqlite") throw new Error(`a SQLite store handed a ${tx.kind} transaction`);
        return tx.db.prepare("SELECT acked_source_seq FROM runs WHERE run_id = ?").pluck().get(runId) as number;
      },
      hostRows: async () =>
        raw(dir, (db) =>
          (
            db.prepare("SELECT source_event_id FROM host_events ORDER BY source_event_id").all() as Array<{
              source_event_id: string;
            }>
          ).map((r) => r.source_event_id),
        ),
    };
  },
  stop: async () => tmp.cleanup(),
};

storeConformance("SQLite", factory, [apiPartsConformance, dispatchPartsConformance]);
