import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import type { OnCommittedEvent } from "../../src/authority/ingest.js";
import { PostgresAuthorityStore } from "../../src/authority/postgres-store.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { durableRunner, SecureAuthority } from "../security/support.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { within } from "../support/within.js";
import { runRecord } from "./run-record.js";

/**
 * A control plane's own rows, written through onCommittedEvent's transaction, against a real
 * runner: a failing callback rolls the event back and it is not acknowledged; the runner
 * resends; once the callback recovers each event is in the host's table exactly once.
 */
describe("the host's commit inside the authority's transaction (PostgreSQL, a real runner)", () => {
  let server: TestPostgres;
  const root = mkdtempSync(join(tmpdir(), "prp-host-commit-"));
  before(async () => {
    server = await startTestPostgres();
  });
  after(async () => {
    rmSync(root, { recursive: true, force: true });
    await server.stop();
  });

  it("a callback failing twice at event 4 leaves no row and no ACK; the resent event commits once with the host's row", async () => {
    const url = await server.database();
    const store = await PostgresAuthorityStore.open(url, { serverKey: ServerKey.generate() });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(
      "CREATE TABLE host_events (run_id TEXT NOT NULL, source_seq BIGINT NOT NULL, source_event_id TEXT NOT NULL, PRIMARY KEY (run_id, source_seq))",
    );
    const calls = new Map<number, number>();
    const onCommittedEvent: OnCommittedEvent = async (event, { runId, sourceSeq, transaction }) => {
      calls.set(sourceSeq, (calls.get(sourceSeq) ?? 0) + 1);
      if (transaction.kind !== "postgres") throw new Error("expected a PostgreSQL transaction");
      await transaction.client.query(
        "INSERT INTO host_events (run_id, source_seq, source_event_id) VALUES ($1, $2, $3)",
        [runId, sourceSeq, event.sourceEventId],
      );
      if (sourceSeq === 4 && calls.get(4)! <= 2) throw new Error("the control plane's ledger is locked");
    };
    const authority = await SecureAuthority.start({ store, onCommittedEvent });
    try {
      const identity = await authority.newRun();
      const { runner, log } = await durableRunner(authority, identity, { stateDir: join(root, identity.runId) });
      assert.deepEqual(
        await within(runner.run(), 60_000, "the run"),
        { code: 0, reason: "run_delivered" },
        log.join("\n"),
      );
      assert.equal(calls.get(4), 3, "refused twice, then committed");
      assert.equal(
        log.filter((line) => line.includes("callback_failed")).length >= 2,
        true,
        `the runner saw the refusals: ${log.join(" | ")}`,
      );
      const { log: events } = await runRecord(url, identity.runId);
      const host = (
        await admin.query<{ source_seq: number; source_event_id: string }>(
          "SELECT source_seq::int, source_event_id FROM host_events WHERE run_id = $1 ORDER BY source_seq",
          [identity.runId],
        )
      ).rows;
      assert.deepEqual(
        host,
        events.map((e) => ({ source_seq: e.source_seq, source_event_id: e.source_event_id })),
        "the host's table holds the run log's events, each once",
      );
      assert.ok(events.length > 4);
    } finally {
      await authority.close();
      await store.close();
      await admin.end();
    }
  });
});
