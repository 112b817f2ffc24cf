import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { PostgresAuthorityStore } from "../../src/authority/postgres-store.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { durableRunner, SecureAuthority } from "../security/support.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { TcpSwitch } from "../support/tcp-switch.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";
import { assertWhole, referenceShape, runRecord, slowHarness, type LoggedRow } from "./run-record.js";

/**
 * The store fails mid-run: the authority refuses new events with a typed reason and keeps
 * what it committed; the runner keeps its outbox and resends; when the store is back the run
 * completes, nothing lost and nothing twice, judged from the database.
 */
describe("PostgreSQL store faults: unreachable, read-only", () => {
  let server: TestPostgres;
  let reference: string[] = [];
  const root = mkdtempSync(join(tmpdir(), "prp-store-faults-"));
  before(async () => {
    server = await startTestPostgres();
    reference = await referenceShape();
  });
  after(async () => {
    rmSync(root, { recursive: true, force: true });
    await server.stop();
  });

  /**
   * A run on an authority whose store reaches its database through `net`, stopped once three
   * events are committed; `fault` breaks the store, `repair` mends it. Judged from the database.
   */
  async function runThrough(
    fault: { code: string; inject(url: string): Promise<void>; repair(url: string): Promise<void> },
    url: string,
    storeUrl: string,
  ) {
    const store = await PostgresAuthorityStore.open(storeUrl, {
      serverKey: ServerKey.generate(),
      connectTimeoutMs: 1_000,
    });
    const authority = await SecureAuthority.start({ store });
    try {
      const identity = await authority.newRun();
      const { runner, log } = await durableRunner(authority, identity, {
        stateDir: join(root, identity.runId),
        driver: slowHarness(),
      });
      const outcome = runner.run();
      await until(async () => (await runRecord(url, identity.runId)).log.length >= 3, "three events committed");
      await fault.inject(url);
      const refusals = () => authority.log.filter((line) => line.includes(fault.code)).length;
      await until(
        () => refusals() >= 2,
        () => `the authority to refuse with ${fault.code} twice; its log: ${authority.log.slice(-5).join(" | ")}`,
        30_000,
      );
      const kept: LoggedRow[] = (await runRecord(url, identity.runId)).log;
      assert.ok(!kept.some((e) => e.event_type === "run.terminal"), "the fault comes mid-run");
      await until(() => refusals() >= 4, `more refusals with ${fault.code}: the runner keeps resending`, 30_000);
      assert.deepEqual(
        (await runRecord(url, identity.runId)).log,
        kept,
        "nothing committed while the store is down, nothing lost",
      );
      assert.ok(
        log.some((line) => line.includes("connection closed")),
        "the runner saw the refusals and redialled",
      );
      await fault.repair(url);
      assert.deepEqual(
        await within(outcome, 60_000, "the run to be delivered once the store is back"),
        { code: 0, reason: "run_delivered" },
        `${log.join("\n")}\nauthority: ${authority.log.slice(-15).join("\n")}`,
      );
      const { log: events, commands } = await runRecord(url, identity.runId);
      assertWhole(events, commands, reference);
      assert.deepEqual(events.slice(0, kept.length), kept);
    } finally {
      await authority.close();
      await store.close();
    }
  }

  /** The database URL, and the same database reached through a switch the test can cut. */
  async function viaSwitch(): Promise<{ url: string; storeUrl: string; net: TcpSwitch }> {
    const url = await server.database();
    const direct = new URL(url);
    const net = await TcpSwitch.start(Number(direct.port));
    const through = new URL(url);
    through.port = String(net.port);
    return { url, storeUrl: through.toString(), net };
  }

  it("unreachable (the network to the database cut): refused as store_unavailable, then resumed", async () => {
    const { url, storeUrl, net } = await viaSwitch();
    try {
      await runThrough(
        { code: "store_unavailable", inject: async () => net.cut(), repair: async () => net.restore() },
        url,
        storeUrl,
      );
    } finally {
      await net.close();
    }
  });

  it("read-only (the database made read-only and its sessions ended): refused as store_read_only, then resumed", async () => {
    const { url, storeUrl, net } = await viaSwitch();
    // Opened before the fault, so it stays writable to lift it again.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const name = new URL(url).pathname.slice(1);
    const endSessions = () =>
      admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        [name],
      );
    const readOnly = async (on: boolean) => {
      await admin.query(
        `ALTER DATABASE ${admin.escapeIdentifier(name)} SET default_transaction_read_only = ${on ? "on" : "off"}`,
      );
      await endSessions();
    };
    try {
      await runThrough(
        { code: "store_read_only", inject: () => readOnly(true), repair: () => readOnly(false) },
        url,
        storeUrl,
      );
    } finally {
      await admin.end();
      await net.close();
    }
  });
});
