import type Database from "better-sqlite3";
import type { CredentialBinding, CredentialStore } from "./credential-store.js";

/** The `credential_observer` rows of runtime.md §5.7: per binding, revision, baseline fingerprint, pending event. */
export const CREDENTIAL_OBSERVER_SQL = `
CREATE TABLE IF NOT EXISTS credential_observer (
  binding_id TEXT PRIMARY KEY, provider TEXT NOT NULL, revision INTEGER NOT NULL CHECK (revision >= 0),
  baseline TEXT, pending INTEGER) STRICT;
`;

interface Row {
  binding_id: string;
  provider: string;
  revision: number;
  baseline: string | null;
  pending: number | null;
}

/** Why a stored binding cannot be believed, or null (checked whenever the state is opened). */
export function credentialRowProblem(row: Row): string | null {
  if (row.baseline !== null && !/^[a-f0-9]{64}$/.test(row.baseline))
    return `credential binding ${row.binding_id} has no valid baseline fingerprint`;
  if (row.pending !== null && row.pending !== row.revision)
    return `credential binding ${row.binding_id} has pending revision ${row.pending}, not its revision ${row.revision}`;
  return null;
}

export const credentialRows = (db: Database.Database): Row[] =>
  db.prepare("SELECT * FROM credential_observer ORDER BY binding_id").all() as Row[];

/**
 * The durable runner's credential store, in its state database: each change is one statement,
 * so baseline, revision and pending event are committed together (runtime.md §13.1). `admitted`
 * runs inside the outbox's transaction that admits the event (outbox-sink.ts).
 */
export function sqliteCredentialStore(db: Database.Database): CredentialStore {
  const get = db.prepare("SELECT * FROM credential_observer WHERE binding_id = ?");
  const insert = db.prepare(
    "INSERT OR IGNORE INTO credential_observer (binding_id, provider, revision, baseline, pending) VALUES (?, ?, 0, NULL, NULL)",
  );
  const update = db.prepare(
    "UPDATE credential_observer SET baseline = ?, revision = ?, pending = ? WHERE binding_id = ?",
  );
  const clear = db.prepare("UPDATE credential_observer SET pending = NULL WHERE binding_id = ? AND pending = ?");
  return {
    load: (bindingId) => {
      const r = get.get(bindingId) as Row | undefined;
      return r
        ? ({
            provider: r.provider,
            revision: r.revision,
            baseline: r.baseline,
            pending: r.pending,
          } satisfies CredentialBinding)
        : null;
    },
    optIn: (bindingId, provider) => void insert.run(bindingId, provider),
    record: (bindingId, c) => void update.run(c.baseline, c.revision, c.pending, bindingId),
    admitted: (bindingId, revision) => void clear.run(bindingId, revision),
  };
}
