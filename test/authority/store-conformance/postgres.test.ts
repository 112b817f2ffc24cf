import { PostgresAuthorityStore } from "../../../src/authority/postgres-store.js";
import { startTestPostgres, withPgClient, type TestPostgres } from "../../support/postgres.js";
import { serverKey } from "../support.js";
import { storeConformance, type OpenedStore } from "./contract.js";

let server: Promise<TestPostgres> | null = null;

storeConformance("PostgreSQL", {
  async open(): Promise<OpenedStore> {
    server ??= startTestPostgres();
    const url = await (await server).database();
    return {
      store: await PostgresAuthorityStore.open(url, { serverKey }),
      reopen: (options = {}) => PostgresAuthorityStore.open(url, { serverKey, ...options }),
      rawAuthKeys: () => withPgClient(url, async (c) => (await c.query<{ auth_key_digest: string }>("SELECT auth_key_digest FROM credentials")).rows.map((r) => r.auth_key_digest)),
      createHostTable: () => withPgClient(url, async (c) => void (await c.query("CREATE TABLE host_events (source_event_id TEXT PRIMARY KEY)"))),
      hostInsert: async (tx, id) => {
        if (tx.kind !== "postgres") throw new Error(`a PostgreSQL store handed a ${tx.kind} transaction`);
        await tx.client.query("INSERT INTO host_events (source_event_id) VALUES ($1)", [id]);
      },
      hostRows: () => withPgClient(url, async (c) => (await c.query<{ source_event_id: string }>("SELECT source_event_id FROM host_events ORDER BY source_event_id")).rows.map((r) => r.source_event_id)),
    };
  },
  stop: async () => {
    if (server) await (await server).stop();
  },
});
