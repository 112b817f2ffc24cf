import { PostgresAuthorityStore } from "../../../src/authority/postgres-store.js";
import { startTestPostgres, withPgClient, type TestPostgres } from "../../support/postgres.js";
import { serverKey } from "../support.js";
import { apiPartsConformance } from "./api-parts.js";
import { dispatchPartsConformance } from "./dispatch-parts.js";
import { storeConformance, type OpenedStore, type StoreFactory } from "./contract.js";

let server: Promise<TestPostgres> | null = null;

const factory: StoreFactory = {
  async open(): Promise<OpenedStore> {
    server ??= startTestPostgres();
    const url = await (await server).database();
    return {
      store: await PostgresAuthorityStore.open(url, { serverKey }),
      reopen: (options = {}) => PostgresAuthorityStore.open(url, { serverKey, ...options }),
      rawAuthKeys: () =>
        withPgClient(url, async (c) =>
          (await c.query<{ auth_key_digest: string }>("SELECT auth_key_digest FROM credentials")).rows.map(
            (r) => r.auth_key_digest,
          ),
        ),
      rawRun: (runId) =>
        withPgClient(
          url,
          async (c) =>
            (await c.query("SELECT * FROM runs WHERE run_id = $1", [runId])).rows[0] as Record<string, unknown>,
        ),
      createHostTable: () =>
        withPgClient(
          url,
          async (c) => void (await c.query("CREATE TABLE host_events (source_event_id TEXT PRIMARY KEY)")),
        ),
      hostInsert: async (tx, id) => {
        if (tx.kind !== "postgres") throw new Error(`a PostgreSQL store handed a ${tx.kind} transaction`);
        await tx.client.query("INSERT INTO host_events (source_event_id) VALUES ($1)", [id]);
      },
      cursorWithin: async (tx, runId) => {
        if (tx.kind !== "postgres") throw new Error(`a PostgreSQL store handed a ${tx.kind} transaction`);
        return Number(
          (
            await tx.client.query<{ acked_source_seq: string }>("SELECT acked_source_seq FROM runs WHERE run_id = $1", [
              runId,
            ])
          ).rows[0]!.acked_source_seq,
        );
      },
      hostRows: () =>
        withPgClient(url, async (c) =>
          (
            await c.query<{ source_event_id: string }>(
              "SELECT source_event_id FROM host_events ORDER BY source_event_id",
            )
          ).rows.map((r) => r.source_event_id),
        ),
    };
  },
  stop: async () => {
    if (server) await (await server).stop();
  },
};

storeConformance("PostgreSQL", factory, [apiPartsConformance, dispatchPartsConformance]);
