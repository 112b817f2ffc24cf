import Database from "better-sqlite3";
import { ok } from "../../src/authority/errors.js";
import type { OnCommittedEvent } from "../../src/authority/ingest.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import type { AuthorityStore, BatchedEvent } from "../../src/authority/store.js";
import { SecureAuthority } from "../security/support.js";
import { serverKey, type tempRoot } from "./support.js";

/**
 * The records the group-commit and pipeline judges read, kept apart from ingest's own word: the
 * store's completed commits (a wrapper logs them), the ACKs a runner receives, and the run log
 * read through a second database connection, which sees only committed rows.
 */
export type Entry = { kind: "commit" | "ack"; runId: string; seq: number };

export function withCommitEvents(store: AuthorityStore, commitEvents: AuthorityStore["commitEvents"]): AuthorityStore {
  return new Proxy(store, {
    get: (target, key) => {
      if (key === "commitEvents") return commitEvents;
      const value = Reflect.get(target, key) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A fault for `recording` to inject into a batch: "throw" fails it before anything is written; "lose" answers it committed and writes nothing. */
export type Fault = (items: readonly BatchedEvent[]) => "throw" | "lose" | null;

/** Once: the first batch holding `runId`'s event `seq`. */
export function once(runId: string, seq: number, kind: "throw" | "lose"): Fault {
  let fired = false;
  return (items) => {
    if (fired || !items.some((i) => i.runId === runId && i.event.sourceSeq === seq)) return null;
    fired = true;
    return kind;
  };
}

/**
 * The store with each completed commit logged, the batches it was given kept, and `fault`
 * consulted first: "throw" fails the transaction before anything is written; "lose" is a broken
 * store that answers every item committed and writes nothing (the must-fail case).
 */
export function recording(
  store: AuthorityStore,
  log: Entry[],
  batches: BatchedEvent[][],
  fault: Fault = () => null,
): AuthorityStore {
  return withCommitEvents(store, async (items, nowMs) => {
    batches.push([...items]);
    const injected = fault(items);
    if (injected === "throw") throw Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR" });
    if (injected === "lose") return items.map((item) => ok({ ackedSourceSeq: item.event.sourceSeq }));
    const results = await store.commitEvents(items, nowMs);
    results.forEach(
      (r, i) => r.ok && log.push({ kind: "commit", runId: items[i]!.runId, seq: items[i]!.event.sourceSeq }),
    );
    return results;
  });
}

/** At an ACK, the highest sourceSeq the run log holds, read through its own connection. */
export function committedThrough(reader: Database.Database, runId: string): number {
  return (
    reader.prepare("SELECT COALESCE(MAX(source_seq), 0) AS seq FROM event_log WHERE run_id = ?").get(runId) as {
      seq: number;
    }
  ).seq;
}

/** An authority on 127.0.0.1 over a fresh SQLite store wrapped by `wrap`, and a reader of that store's file. */
export async function served(
  tmp: ReturnType<typeof tempRoot>,
  wrap: (store: AuthorityStore) => AuthorityStore,
  onCommittedEvent?: OnCommittedEvent,
) {
  const store = SqliteAuthorityStore.open(tmp.dir(), { serverKey });
  const authority = await SecureAuthority.start({
    store: wrap(store),
    ...(onCommittedEvent ? { onCommittedEvent } : {}),
  });
  const reader = new Database(store.path, { readonly: true });
  return {
    authority,
    reader,
    close: async () => {
      reader.close();
      await authority.close();
      await store.close();
    },
  };
}
