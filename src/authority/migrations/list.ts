import { StateError } from "../../storage/private-sqlite.js";
import {
  POSTGRES_V1,
  POSTGRES_V2,
  POSTGRES_V3,
  POSTGRES_V4,
  POSTGRES_V5,
  POSTGRES_V6,
  POSTGRES_V7,
  SQLITE_V1,
  SQLITE_V2,
  SQLITE_V3,
  SQLITE_V4,
  SQLITE_V5,
  SQLITE_V6,
  SQLITE_V7,
} from "./schema.js";

/**
 * One forward-only step of the authority store's schema, for both databases: applied in
 * version order, each once, and recorded in the store's `schema_migrations` table. A new
 * aggregate's tables are a new version here, never an edit of a released one.
 */
export interface Migration {
  version: number;
  /** What the version adds, recorded beside it. */
  name: string;
  sqlite: string;
  postgres: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "authority store: runs, credentials, commands, window, run log, diagnostics",
    sqlite: SQLITE_V1,
    postgres: POSTGRES_V1,
  },
  {
    version: 2,
    name: "runner connections: each admitted connection with the build its runner reported (contract digest)",
    sqlite: SQLITE_V2,
    postgres: POSTGRES_V2,
  },
  {
    version: 3,
    name: "HTTP API: bearer tokens (digests only), each API-created run's spec and labels",
    sqlite: SQLITE_V3,
    postgres: POSTGRES_V3,
  },
  {
    version: 4,
    name: "run queue: workers (credential digests only), each API-created run's dispatch, admission caps",
    sqlite: SQLITE_V4,
    postgres: POSTGRES_V4,
  },
  {
    version: 5,
    name: "named agents: the agent profiles each worker advertises",
    sqlite: SQLITE_V5,
    postgres: POSTGRES_V5,
  },
  {
    version: 6,
    name: "traces: the trace context of the API request that created each run",
    sqlite: SQLITE_V6,
    postgres: POSTGRES_V6,
  },
  {
    version: 7,
    name: "command gauges: the unanswered commands in the order they were queued",
    sqlite: SQLITE_V7,
    postgres: POSTGRES_V7,
  },
];

/** The table both databases record applied versions in. */
export const MIGRATIONS_TABLE = "schema_migrations";

/**
 * The migrations still to apply to a store that records `recorded`, in order. A store that
 * records a version this code does not know was written by a newer release, and is refused
 * rather than used (`state_unknown_schema`).
 */
export function pendingMigrations(
  recorded: readonly number[],
  location: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Migration[] {
  const known = new Set(migrations.map((m) => m.version));
  const unknown = recorded.find((v) => !known.has(v));
  if (unknown !== undefined) {
    const latest = Math.max(0, ...migrations.map((m) => m.version));
    throw new StateError(
      "state_unknown_schema",
      location,
      `the store records schema version ${Math.max(...recorded)}, and this code knows versions up to ${latest}: it was written by a newer release; open it with that release or a later one`,
    );
  }
  const applied = new Set(recorded);
  return migrations.filter((m) => !applied.has(m.version)).sort((a, b) => a.version - b.version);
}
