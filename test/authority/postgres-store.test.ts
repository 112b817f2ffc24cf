import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MIGRATIONS } from "../../src/authority/migrations/list.js";
import { migratePostgres as migrate } from "../../src/authority/postgres/migrate.js";
import { CHANNEL } from "../../src/authority/postgres/handle.js";
import { FULL_READ_MS, PostgresNotices } from "../../src/authority/postgres/notices.js";
import { PostgresAuthorityStore } from "../../src/authority/postgres-store.js";
import type { StoreNotice } from "../../src/authority/store.js";
import { startTestPostgres, withPgClient, type TestPostgres } from "../support/postgres.js";
import { until } from "../support/until.js";
import { identity, serverKey, unwrap } from "./support.js";

const versions = (url: string) =>
  withPgClient(url, async (c) =>
    (await c.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version")).rows.map(
      (r) => r.version,
    ),
  );

describe("PostgreSQL store: migrations and notices between instances", () => {
  let server: TestPostgres;
  before(async () => {
    server = await startTestPostgres();
  });
  after(() => server.stop());

  it("instances opening one new database together apply each migration once; a reopen applies none", async () => {
    const url = await server.database();
    const stores = await Promise.all([1, 2, 3].map(() => PostgresAuthorityStore.open(url, { serverKey })));
    assert.deepEqual(
      await versions(url),
      MIGRATIONS.map((m) => m.version),
    );
    await Promise.all(stores.map((s) => s.close()));
    assert.deepEqual(await withPgClient(url, (c) => migrate(c, url, 0)), [], "nothing pending on a restart");
    const again = await PostgresAuthorityStore.open(url, { serverKey });
    assert.deepEqual(
      await versions(url),
      MIGRATIONS.map((m) => m.version),
    );
    await again.close();
  });

  it("applies a new migration in order on the next open, and refuses a database a newer release migrated", async () => {
    const url = await server.database();
    await (await PostgresAuthorityStore.open(url, { serverKey })).close();
    const next = {
      version: MIGRATIONS.length + 1,
      name: "a test column",
      sqlite: "ALTER TABLE runs ADD COLUMN note TEXT",
      postgres: "ALTER TABLE runs ADD COLUMN note TEXT",
    };
    assert.deepEqual(await withPgClient(url, (c) => migrate(c, url, 0, [...MIGRATIONS, next])), [next.version]);
    await assert.rejects(
      PostgresAuthorityStore.open(url, { serverKey }),
      (err: Error & { code?: string }) => err.code === "state_unknown_schema" && !err.message.includes("password"),
    );
  });

  it("a failing migration leaves nothing applied", async () => {
    const url = await server.database();
    const broken = [
      ...MIGRATIONS,
      {
        version: MIGRATIONS.length + 1,
        name: "broken",
        sqlite: "",
        postgres: "ALTER TABLE no_such_table ADD COLUMN x INT",
      },
    ];
    await assert.rejects(
      withPgClient(url, (c) => migrate(c, url, 0, broken)),
      /no_such_table/,
    );
    assert.equal(
      await withPgClient(url, async (c) => (await c.query("SELECT to_regclass('runs') AS t")).rows[0].t),
      null,
      "the first migration rolled back with it",
    );
  });

  it("a command queued or a revocation through one instance reaches the other's listeners, not its own", async () => {
    const url = await server.database();
    const a = await PostgresAuthorityStore.open(url, { serverKey });
    const b = await PostgresAuthorityStore.open(url, { serverKey });
    const heardA: StoreNotice[] = [];
    const heardB: StoreNotice[] = [];
    a.subscribe((n) => heardA.push(n));
    const stop = b.subscribe((n) => heardB.push(n));
    unwrap(await a.registerRun(identity(1), { protocolVersion: 3, nowMs: 0 }));
    unwrap(
      await a.appendCommand(
        "run_1",
        { commandId: "c1", controllerSeq: 1, type: "turn.start", payload: "{}", envelope: "{}" },
        1,
      ),
    );
    unwrap(await a.revoke("run_1", undefined, 2));
    await until(
      () => heardB.length === 2,
      () => `two notices at B, heard ${JSON.stringify(heardB)}`,
    );
    assert.deepEqual(heardB, [
      { kind: "command_queued", runId: "run_1" },
      { kind: "revoked", runId: "run_1", revocationEpoch: 1 },
    ]);
    // A refused change commits no notice.
    assert.equal((await a.revoke("run_1", 1, 3)).ok, false);
    unwrap(
      await b.appendCommand(
        "run_1",
        { commandId: "c2", controllerSeq: 2, type: "turn.start", payload: "{}", envelope: "{}" },
        4,
      ),
    );
    await until(() => heardA.length === 1, "A to hear B's command");
    assert.deepEqual(heardA, [{ kind: "command_queued", runId: "run_1" }]);
    assert.equal(heardB.length, 2, "B did not hear its own command, nor A's refused revocation");
    stop();
    await a.close();
    await b.close();
  });

  it("the change mark moves with a reconnect and every 30 s, not with a notice acted on as it came; null while nothing listens", async () => {
    const url = await server.database();
    let nowMs = 0;
    const config = { connectionString: url, application_name: "prp-notices-test" };
    const notices = new PostgresNotices(
      config,
      "test",
      "origin-a",
      () => undefined,
      () => nowMs,
    );
    const heard: StoreNotice[] = [];
    notices.subscribe((n) => heard.push(n));
    const mark = () => notices.externalChangeMark();
    const notify = (origin: string) =>
      withPgClient(url, (c) =>
        c.query("SELECT pg_notify($1, $2)", [CHANNEL, JSON.stringify({ origin, kind: "command_queued", runId: "r1" })]),
      );
    try {
      assert.equal(await mark(), null, "nothing listens yet: every poll must read");
      await notices.listen();
      const first = (await mark())!;
      assert.equal(typeof first, "number");
      assert.equal(await mark(), first, "nothing changed: a poll reads nothing");
      // Notices arrive in commit order: this instance's own is dropped before the other's is heard.
      await notify("origin-a");
      await notify("origin-b");
      await until(
        () => heard.length === 1,
        () => `the other instance's notice, heard ${JSON.stringify(heard)}`,
      );
      assert.deepEqual(heard, [{ kind: "command_queued", runId: "r1" }]);
      assert.equal(await mark(), first, "a notice is acted on as it comes: no poll reads for it");
      nowMs += FULL_READ_MS - 1;
      assert.equal(await mark(), first);
      nowMs += 1;
      assert.equal(await mark(), first + 1, "a full read every FULL_READ_MS");
      // The listening connection ended by the server: what was notified meanwhile is lost.
      await withPgClient(url, (c) =>
        c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [
          "prp-notices-test",
        ]),
      );
      await until(() => heard.some((n) => n.kind === "missed"), "the reconnect's missed notice");
      assert.equal(await mark(), first + 2, "a reconnect moves it: notices may have been lost");
    } finally {
      await notices.close();
    }
    assert.equal(await mark(), null, "closed: nothing listens");
  });
});
