import { join } from "node:path";
import { openPrivateDatabase, StateError } from "../storage/private-sqlite.js";
import { MAX_STORE_BYTES, STORE_FILE } from "./limits.js";
import { ServerKey } from "./server-key.js";
import { SqliteCommands } from "./sqlite/commands.js";
import { SqliteConnections } from "./sqlite/connections.js";
import { SqliteCredentials } from "./sqlite/credentials.js";
import { SqliteDiagnostics } from "./sqlite/diagnostics.js";
import { SqliteEvents } from "./sqlite/events.js";
import { SqliteHandle } from "./sqlite/handle.js";
import { SqliteOpenChecks } from "./sqlite/open-checks.js";
import { SqliteRuns } from "./sqlite/runs.js";
import { SqliteDispatch } from "./sqlite/dispatch.js";
import { PartsStore } from "./parts-store.js";
import { SqliteApiTokens } from "./sqlite/api-tokens.js";
import { SqliteRunSpecs } from "./sqlite/run-specs.js";
import type { AuthorityStore } from "./store.js";

export interface SqliteStoreOptions {
  /** Seals every stored auth key; kept outside the database (server-key-source.ts). */
  serverKey: ServerKey;
  /**
   * When the store's credentials do not open under `serverKey` (they were sealed under another
   * key, or left unsealed by an earlier version): delete them all and adopt this key, instead
   * of refusing to open. Every runner then needs a fresh ticket. For a key change, once.
   */
  adoptServerKey?: boolean;
  /** The size bound of the main file; 192 MiB (§6.2). Smaller only to test the bound. */
  maxStoreBytes?: number;
}

/**
 * The authority's durable store on SQLite (runtime.md §6.2, D7): one private database file in
 * the state directory (0700 directory, 0600 files, symlinks refused, WAL with
 * synchronous=FULL), ≤192 MiB, one transaction per change. Many runs share the file; every
 * row is keyed by runId. The database is checked against its invariants whenever it is opened
 * and refused (StateError) when any fails: among them, the server key must be the one its
 * credentials are sealed under, and each credential's key must open in its own row.
 */
export class SqliteAuthorityStore extends PartsStore implements AuthorityStore {
  private constructor(private readonly h: SqliteHandle) {
    const connections = new SqliteConnections(h);
    super({
      runs: new SqliteRuns(h),
      credentials: new SqliteCredentials(h),
      events: new SqliteEvents(h),
      commands: new SqliteCommands(h),
      diagnostics: new SqliteDiagnostics(h),
      connections,
      // One process holds a SQLite store: its notices are its own connections part's.
      notices: connections,
      tokens: new SqliteApiTokens(h),
      specs: new SqliteRunSpecs(h),
      dispatch: new SqliteDispatch(h),
    });
  }

  get path(): string {
    return this.h.path;
  }

  static open(stateDirectory: string, options: SqliteStoreOptions): SqliteAuthorityStore {
    const path = join(stateDirectory, STORE_FILE);
    // Fail closed for a caller the types did not reach: no key, no store.
    if (!(options?.serverKey instanceof ServerKey))
      throw new StateError(
        "server_key_missing",
        path,
        "the store needs the server key its credentials are sealed under (the serverKey option)",
      );
    const maxStoreBytes = options.maxStoreBytes ?? MAX_STORE_BYTES;
    const db = openPrivateDatabase(path, { maxFileBytes: maxStoreBytes });
    try {
      const handle = new SqliteHandle(db, path, maxStoreBytes, options.serverKey);
      // IMMEDIATE: two processes opening one new file must not both migrate it.
      db.transaction(() => new SqliteOpenChecks(handle).initialise(options.adoptServerKey === true)).immediate();
      return new SqliteAuthorityStore(handle);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /**
   * Copies the WAL into the database and has the next write start the WAL over from its
   * beginning, so that a small write on a full disk can reuse the WAL file's room instead of
   * growing it. False when it could not (a reader held it back, or the copy itself needed room).
   */
  restartJournal(): boolean {
    try {
      const [row] = this.h.db.pragma("wal_checkpoint(RESTART)") as Array<{ busy: number }>;
      return row?.busy === 0;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    while (this.h.held !== null) await this.h.held;
    if (this.h.db.open) this.h.db.close();
  }
}
