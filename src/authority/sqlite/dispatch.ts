import { DispatchStore, type DispatchDb } from "../dispatch-store.js";
import type { CredentialPlace } from "../sealed-credential.js";
import type { Row } from "../store-rows.js";
import type { SqliteHandle } from "./handle.js";

/** SQLite binds no booleans. */
const bindable = (params: unknown[]): unknown[] => params.map((p) => (typeof p === "boolean" ? Number(p) : p));

/**
 * The run queue on SQLite: the rules of dispatch-store.ts in one IMMEDIATE transaction each.
 * One writer, so no row locks: every check inside a write is exact.
 */
export class SqliteDispatch extends DispatchStore {
  private readonly db: DispatchDb;

  constructor(private readonly h: SqliteHandle) {
    super();
    this.db = {
      all: async (sql, params = []) => h.sql(sql).all(...bindable(params)) as Row[],
      run: async (sql, params = []) => h.sql(sql).run(...bindable(params)).changes,
      forUpdate: () => "",
      // One process holds a SQLite store: there is no other instance to tell.
      revoked: async () => undefined,
      seal: (digest: string, place: CredentialPlace) => h.seal(digest, place),
    };
  }

  protected read<T>(fn: (db: DispatchDb) => Promise<T>): Promise<T> {
    return this.h.readAsync(() => fn(this.db));
  }

  protected write<T>(fn: (db: DispatchDb) => Promise<T>): Promise<T> {
    return this.h.writeAsync(() => fn(this.db));
  }
}
