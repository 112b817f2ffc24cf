import pg from "pg";
import { PostgresAuthorityStore } from "../../../src/authority/postgres-store.js";
import { startTestPostgres, type TestPostgres } from "../../support/postgres.js";
import { serverKey } from "../support.js";
import { storeConformance, type OpenedStore } from "./contract.js";

let server: Promise<TestPostgres> | null = null;

/** Reads the database apart from the store's code. */
async function raw<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

storeConformance("PostgreSQL", {
  async open(): Promise<OpenedStore> {
    server ??= startTestPostgres();
    const url = await (await server).database();
    return {
      store: await PostgresAuthorityStore.open(url, { serverKey }),
      reopen: (options = {}) => PostgresAuthorityStore.open(url, { serverKey, ...options }),
      rawAuthKeys: () => raw(url, async (c) => (await c.query<{ auth_key_digest: string }>("SELECT auth_key_digest FROM credentials")).rows.map((r) => r.auth_key_digest)),
      createHostTable: () => raw(url, async (c) => void (await c.query("CREATE TABLE host_events (source_event_id TEXT PRIMARY KEY)"))),
      hostInsert: async (tx, id) => {
        if (tx.kind !== "postgres") throw new Error(`a PostgreSQL store handed a ${tx.kind} transaction`);
        await tx.client.query("INSERT INTO host_events (source_event_id) VALUES ($1)", [id]);
      },
      hostRows: () => raw(url, async (c) => (await c.query<{ source_event_id: string }>("SELECT source_event_id FROM host_events ORDER BY source_event_id")).rows.map((r) => r.source_event_id)),
    };
  },
  stop: async () => {
    if (server) await (await server).stop();
  },
});
