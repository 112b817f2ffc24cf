import type pg from "pg";
import { DispatchStore, type DispatchDb } from "../dispatch-store.js";
import type { Row } from "../store-rows.js";
import type { PostgresHandle } from "./handle.js";

/** `?` → `$1, $2, …`: the shared SQL has no `?` but its parameters. */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/**
 * The run queue on PostgreSQL: the rules of dispatch-store.ts, with the row locks several
 * instances need. The worker row is locked per poll; candidates `FOR UPDATE OF d SKIP LOCKED`
 * (two instances never claim one run); cap rows locked in scope order before their counts.
 */
export class PostgresDispatch extends DispatchStore {
  constructor(private readonly h: PostgresHandle) {
    super();
  }

  protected read<T>(fn: (db: DispatchDb) => Promise<T>): Promise<T> {
    return fn(this.over(this.h.pool, null));
  }

  protected write<T>(fn: (db: DispatchDb) => Promise<T>): Promise<T> {
    return this.h.transaction((c) => fn(this.over(c, c)));
  }

  private over(q: pg.Pool | pg.PoolClient, tx: pg.PoolClient | null): DispatchDb {
    return {
      all: async (sql, params = []) => (await q.query(numbered(sql), params)).rows as Row[],
      run: async (sql, params = []) => (await q.query(numbered(sql), params)).rowCount ?? 0,
      forUpdate: (of, skipLocked) =>
        tx ? ` FOR UPDATE${of ? ` OF ${of}` : ""}${skipLocked ? " SKIP LOCKED" : ""}` : "",
      revoked: async (runId, revocationEpoch) => {
        if (tx) await this.h.notify(tx, { kind: "revoked", runId, revocationEpoch });
      },
      seal: (digest, place) => this.h.seal(digest, place),
    };
  }
}
