import pg from "pg";
import { StateError } from "../storage/private-sqlite.js";
import { PostgresCommands } from "./postgres/commands.js";
import { PostgresConnections } from "./postgres/connections.js";
import { PostgresCredentials } from "./postgres/credentials.js";
import { PostgresDiagnostics } from "./postgres/diagnostics.js";
import { PostgresEvents } from "./postgres/events.js";
import { PostgresHandle } from "./postgres/handle.js";
import { migratePostgres } from "./postgres/migrate.js";
import { PostgresNotices } from "./postgres/notices.js";
import { PostgresApiTokens } from "./postgres/api-tokens.js";
import { PostgresRunSpecs } from "./postgres/run-specs.js";
import { PostgresRuns } from "./postgres/runs.js";
import { opensServerKeyCheck, serverKeyCheck } from "./sealed-credential.js";
import { ServerKey } from "./server-key.js";
import { PostgresDispatch } from "./postgres/dispatch.js";
import { PartsStore } from "./parts-store.js";
import type { AuthorityStore } from "./store.js";

export interface PostgresStoreOptions {
  /** Seals every stored auth key; kept outside the database (server-key-source.ts). */
  serverKey: ServerKey;
  /** As SqliteStoreOptions.adoptServerKey: delete every credential and adopt this key, once. */
  adoptServerKey?: boolean;
  /** Connections in the pool (default 10), besides the one that listens for notices. */
  poolSize?: number;
  /** How long to wait for a connection before the call fails (default 5 s). */
  connectTimeoutMs?: number;
  /** Diagnostics for a person (the notice connection lost and regained); never a secret. */
  log?: (text: string) => void;
  /** Refuse a database without the store's schema (`store_missing`) instead of making it there. */
  mustExist?: boolean;
}

const INT8 = 20;

/** BIGINT columns (times, counters) read as numbers: every one of them stays a safe integer. */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format as "text")) as pg.CustomTypesConfig["getTypeParser"],
};

/**
 * The authority's durable store on PostgreSQL, for several authority instances on one
 * database (runtime.md §6.2). Every method is one transaction; those that change a run lock
 * its row first (`SELECT … FOR UPDATE`), so admissions, commits and command changes of one run
 * are serialised across instances, and always in the order run row, then credential rows.
 * Commands queued and revocations commit a NOTIFY, which every other instance's `subscribe`
 * listeners receive after the commit.
 */
export class PostgresAuthorityStore extends PartsStore implements AuthorityStore {
  private closed = false;

  private constructor(
    private readonly h: PostgresHandle,
    private readonly notices: PostgresNotices,
  ) {
    super({
      runs: new PostgresRuns(h),
      credentials: new PostgresCredentials(h),
      events: new PostgresEvents(h),
      commands: new PostgresCommands(h),
      diagnostics: new PostgresDiagnostics(h),
      connections: new PostgresConnections(h),
      notices,
      tokens: new PostgresApiTokens(h),
      specs: new PostgresRunSpecs(h),
      dispatch: new PostgresDispatch(h),
    });
  }

  /** The database named without its password: what errors and logs say. */
  get location(): string {
    return this.h.location;
  }

  /**
   * Connects, applies pending migrations, checks the server key against the stored check and
   * starts listening for other instances' notices. Throws StateError on a database it must
   * refuse, and the connection error when the database is unreachable.
   */
  static async open(url: string, options: PostgresStoreOptions): Promise<PostgresAuthorityStore> {
    const location = redacted(url);
    if (!(options?.serverKey instanceof ServerKey))
      throw new StateError(
        "server_key_missing",
        location,
        "the store needs the server key its credentials are sealed under (the serverKey option)",
      );
    const config: pg.ClientConfig = {
      connectionString: url,
      types,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
      application_name: "prp-authority",
    };
    const log = options.log ?? (() => undefined);
    const pool = new pg.Pool({ ...config, max: options.poolSize ?? 10 });
    // An idle connection the server drops (a restart) is discarded; the next call reconnects.
    pool.on("error", (err) => log(`store ${location}: an idle connection failed: ${err.message}`));
    const handle = new PostgresHandle(pool, location, options.serverKey);
    const store = new PostgresAuthorityStore(handle, new PostgresNotices(config, location, handle.origin, log));
    try {
      const client = await pool.connect();
      try {
        if (
          options.mustExist === true &&
          !(await client.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present"))
            .rows[0]?.present
        ) {
          throw new StateError(
            "store_missing",
            location,
            "no store in this database: prp authority serve or prp authority run create makes one; check --store",
          );
        }
        await migratePostgres(client, location, Date.now());
      } finally {
        client.release();
      }
      await handle.transaction((c) => checkServerKey(handle, c, options.adoptServerKey === true));
      await store.notices.listen();
      return store;
    } catch (err) {
      await store.close();
      throw err;
    }
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.notices.close();
    await this.h.pool.end();
  }
}

async function checkServerKey(h: PostgresHandle, c: pg.PoolClient, adopt: boolean): Promise<void> {
  await c.query("LOCK TABLE meta IN EXCLUSIVE MODE");
  const check = (await c.query<{ value: string }>("SELECT value FROM meta WHERE key = 'server_key_check'")).rows[0];
  if (!check)
    return void (await c.query("INSERT INTO meta (key, value) VALUES ('server_key_check', $1)", [
      serverKeyCheck(h.serverKey),
    ]));
  if (opensServerKeyCheck(h.serverKey, check.value)) return;
  if (!adopt)
    throw new StateError(
      "state_server_key_mismatch",
      h.location,
      "the server key is not the one this store's credentials are sealed under: give the authority the key it was opened with before; to change the key, open it once with adoptServerKey, which deletes every ticket and lease (runners need a fresh ticket)",
    );
  await c.query("DELETE FROM credentials");
  await c.query("UPDATE meta SET value = $1 WHERE key = 'server_key_check'", [serverKeyCheck(h.serverKey)]);
}

/** The URL without its password. */
function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparseable url)";
  }
}
