import type Database from "better-sqlite3";
import type pg from "pg";
import { ServerKey } from "../../src/authority/server-key.js";
import type { AuthorityStore } from "../../src/authority/store.js";

/**
 * The rows of the store-migration fixtures (test/authority/fixtures/store-v1.*.sql): written
 * through the store API by the code of schema version 1, dumped to SQL text, and read back by
 * store-migration.test.ts through the code of today. A fixed server key, so that the
 * credentials sealed then open now.
 */
export const FIXTURE_SERVER_KEY = ServerKey.fromHex("5e".repeat(32)) as ServerKey;
export const FIXTURE_NOW = Date.UTC(2026, 0, 2, 3, 4, 5);

export const fixtureIdentity = {
  runnerInstanceId: "runner_fixture",
  environmentLeaseId: "env_fixture",
  runId: "run_fixture",
  normalizedSessionId: "session_fixture",
  turnId: "turn_fixture",
  itemId: "item_fixture",
};

export const FIXTURE_TICKET = `sha256:${"d4".repeat(32)}`;
export const FIXTURE_LEASE = `sha256:${"e5".repeat(32)}`;
export const FIXTURE_COMMAND = "command_fixture_1";
export const FIXTURE_EVENTS = 3;

export const fixtureEnvelope = (seq: number): string =>
  JSON.stringify({ runId: fixtureIdentity.runId, sourceSeq: seq, type: "output.delta", payload: { text: `d${seq}` } });

const must = <T>(result: { ok: true; value: T } | { ok: false; error: { code: string } }): T => {
  if (!result.ok) throw new Error(`fixture step refused: ${result.error.code}`);
  return result.value;
};

/** A run with a ticket spent on a lease, three committed events, a command answered and a diagnostic. */
export async function writeFixtureRows(store: AuthorityStore): Promise<void> {
  const nowMs = FIXTURE_NOW;
  must(await store.registerRun(fixtureIdentity, { protocolVersion: 3, nowMs }));
  must(
    await store.insertTicket({
      runId: fixtureIdentity.runId,
      credentialId: FIXTURE_TICKET,
      authKeyDigest: `sha256:${"a1".repeat(32)}`,
      issuedAtUnixMs: nowMs,
      expiresAtUnixMs: nowMs + 3_600_000,
    }),
  );
  const ticket = await store.credential(FIXTURE_TICKET);
  if (!ticket) throw new Error("fixture ticket not stored");
  const { connectionId } = must(
    await store.reauthorize({
      expected: ticket,
      selectedVersion: 3,
      mint: {
        credentialId: FIXTURE_LEASE,
        authKeyDigest: `sha256:${"b2".repeat(32)}`,
        leaseId: "lease_fixture",
        expiresAtUnixMs: nowMs + 600_000,
      },
      nowMs,
      runner: { runnerVersion: "0.1.0", runnerDigest: `sha256:${"c3".repeat(32)}`, contractDigest: null },
    }),
  );
  for (let seq = 1; seq <= FIXTURE_EVENTS; seq++)
    must(
      await store.commitEvent(
        fixtureIdentity.runId,
        connectionId,
        {
          sourceSeq: seq,
          sourceEventId: `event_fixture_${seq}`,
          eventType: "output.delta",
          priority: 1,
          envelope: fixtureEnvelope(seq),
        },
        nowMs + seq,
      ),
    );
  must(
    await store.appendCommand(
      fixtureIdentity.runId,
      {
        commandId: FIXTURE_COMMAND,
        controllerSeq: 1,
        type: "cancel",
        payload: '{"reason":"fixture"}',
        envelope: '{"commandId":"command_fixture_1","type":"cancel"}',
      },
      nowMs + 10,
    ),
  );
  must(await store.deliverNextCommand(fixtureIdentity.runId, connectionId, false, nowMs + 11));
  must(
    await store.recordCommandResult(
      fixtureIdentity.runId,
      connectionId,
      {
        commandId: FIXTURE_COMMAND,
        status: "completed",
        result: '{"commandId":"command_fixture_1","result":{},"status":"completed"}',
      },
      nowMs + 12,
    ),
  );
  await store.recordDiagnostic(fixtureIdentity.runId, { code: "fixture_note", message: "a diagnostic" }, nowMs + 13);
}

const literal = (value: unknown): string => {
  if (value === null) return "NULL";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  return `'${String(value).replaceAll("'", "''")}'`;
};

const insert = (table: string, row: Record<string, unknown>): string =>
  `INSERT INTO ${table} (${Object.keys(row).join(", ")}) VALUES (${Object.values(row).map(literal).join(", ")});`;

/** A `.dump`-style text of a SQLite database: its schema, then every row, in one transaction. */
export function dumpSqlite(db: Database.Database): string {
  const objects = db
    .prepare(
      "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
    )
    .all() as Array<{ type: string; name: string; sql: string }>;
  const lines = ["BEGIN;", ...objects.map((o) => `${o.sql};`)];
  for (const o of objects.filter((x) => x.type === "table"))
    for (const row of db.prepare(`SELECT * FROM ${o.name} ORDER BY rowid`).all() as Array<Record<string, unknown>>)
      lines.push(insert(o.name, row));
  for (const row of db.prepare("SELECT name, seq FROM sqlite_sequence").all() as Array<Record<string, unknown>>)
    lines.push(insert("sqlite_sequence", row));
  lines.push("COMMIT;");
  return `${lines.join("\n")}\n`;
}

/**
 * A PostgreSQL database as SQL text without pg_dump: `schema` (the migrations' own SQL, as the
 * code of the time applied them), then every row of `tables` in order, read back with SELECT.
 */
export async function dumpPostgres(client: pg.ClientBase, schema: string, tables: readonly string[]): Promise<string> {
  const lines = ["BEGIN;", schema.trim()];
  for (const table of tables) {
    const rows = (await client.query<Record<string, unknown>>(`SELECT * FROM ${table} ORDER BY 1, 2`)).rows;
    for (const row of rows) lines.push(insert(table, row));
  }
  lines.push(
    "SELECT setval(pg_get_serial_sequence('diagnostics', 'id'), (SELECT COALESCE(MAX(id), 1) FROM diagnostics));",
  );
  lines.push("COMMIT;");
  return `${lines.join("\n")}\n`;
}
