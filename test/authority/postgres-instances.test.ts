import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PostgresAuthorityStore } from "../../src/authority/postgres-store.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { RUNNER_CONNECT_PATH_PREFIX } from "../../src/transport/index.js";
import { queueOpeningCommands, SecureAuthority, unqueuedRunner } from "../security/support.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { TcpSwitch } from "../support/tcp-switch.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";
import { assertWhole, referenceShape, runRecord, slowHarness } from "./run-record.js";

describe("two authority instances on one PostgreSQL database", () => {
  let server: TestPostgres;
  let reference: string[] = [];
  const roots: string[] = [];
  before(async () => {
    server = await startTestPostgres();
    reference = await referenceShape();
  });
  after(async () => {
    for (const r of roots) rmSync(r, { recursive: true, force: true });
    await server.stop();
  });

  /** Instances A and B on one fresh database, each with its own store, one server key between them. */
  async function twoInstances() {
    const url = await server.database();
    const serverKey = ServerKey.generate();
    const storeA = await PostgresAuthorityStore.open(url, { serverKey });
    const storeB = await PostgresAuthorityStore.open(url, { serverKey });
    const a = await SecureAuthority.start({ store: storeA });
    const b = await SecureAuthority.start({ store: storeB });
    const runnerRoot = mkdtempSync(join(tmpdir(), "prp-two-instances-"));
    roots.push(runnerRoot);
    const close = async () => {
      await a.close();
      await b.close();
      await storeA.close();
      await storeB.close();
    };
    /** Each committed event reached one instance's host callback, exactly once (inside its commit). */
    const hostSeen = (runId: string) =>
      [...(a.committed.get(runId) ?? []), ...(b.committed.get(runId) ?? [])].map((e) => e.sourceEventId).sort();
    return { url, a, b, hostSeen, runnerRoot, close };
  }

  it("a runner dropped by A reconnects to B behind the same address; the run goes on with nothing lost and nothing run twice", async () => {
    const { url, a, b, hostSeen, runnerRoot, close } = await twoInstances();
    const front = await TcpSwitch.start(a.port);
    try {
      const identity = await a.newRun();
      const { runner, log } = await unqueuedRunner(a, identity, {
        connectUrl: `ws://127.0.0.1:${front.port}${RUNNER_CONNECT_PATH_PREFIX}${identity.runId}`,
        stateDir: join(runnerRoot, identity.runId),
        // Slow enough that A is closed mid-run.
        driver: slowHarness(),
      });
      await queueOpeningCommands(a.server, identity);
      const outcome = runner.run();
      await until(async () => (await runRecord(url, identity.runId)).log.length >= 3, "A to commit three events");
      assert.equal(a.server.activeRunnerConnectionCount(identity.runId), 1, "the runner is on A");
      const before = (await runRecord(url, identity.runId)).log;
      assert.ok(!before.some((e) => e.event_type === "run.terminal"), "the drop comes mid-run");
      front.pointAt(b.port);
      await a.server.close(); // A goes away; its runner connection with it
      assert.deepEqual(
        await within(outcome, 60_000, "the run to be delivered"),
        { code: 0, reason: "run_delivered" },
        log.join("\n"),
      );
      const { log: events, commands } = await runRecord(url, identity.runId);
      assertWhole(events, commands, reference);
      assert.deepEqual(
        hostSeen(identity.runId),
        events.map((e) => e.source_event_id).sort(),
        "each event reached a host callback once",
      );
      assert.deepEqual(events.slice(0, before.length), before, "what A committed is kept as it was");
      const run = (await b.server.run(identity.runId))!;
      assert.ok(run.connectionCount >= 2, "the runner was admitted again, by B");
      assert.equal(run.ackedSourceSeq, events.length);
    } finally {
      await front.close();
      await close();
    }
  });

  it("commands queued through A reach a runner connected to B (NOTIFY), and the run completes", async () => {
    const { url, a, b, hostSeen, runnerRoot, close } = await twoInstances();
    try {
      const identity = await a.newRun();
      const { runner, log } = await unqueuedRunner(b, identity, {
        stateDir: join(runnerRoot, identity.runId),
        bootstrapToken: await a.ticket(identity.runId),
        driver: slowHarness(),
      });
      const outcome = runner.run();
      await until(
        () => b.server.activeRunnerConnectionCount(identity.runId) === 1,
        () => `the runner to connect to B: ${log.join("\n")} / ${b.log.join("\n")}`,
      );
      assert.equal(a.server.activeRunnerConnectionCount(identity.runId), 0);
      await queueOpeningCommands(a.server, identity); // through A only
      assert.deepEqual(
        await within(outcome, 60_000, "the run to be delivered"),
        { code: 0, reason: "run_delivered" },
        log.join("\n"),
      );
      assert.equal(
        (await b.server.run(identity.runId))!.connectionCount,
        1,
        "on B's first connection: B delivered them when A's NOTIFY came, not at a reconnect",
      );
      const { log: events, commands } = await runRecord(url, identity.runId);
      assertWhole(events, commands, reference);
      assert.deepEqual(
        hostSeen(identity.runId),
        events.map((e) => e.source_event_id).sort(),
        "each event reached a host callback once",
      );
    } finally {
      await close();
    }
  });

  it("a revocation through A reaches the runner connected to B (NOTIFY), which stops as revoked", async () => {
    const { url, a, b, runnerRoot, close } = await twoInstances();
    try {
      const identity = await a.newRun();
      const { runner, log } = await unqueuedRunner(b, identity, {
        stateDir: join(runnerRoot, identity.runId),
        driver: slowHarness(),
      });
      await queueOpeningCommands(b.server, identity);
      const outcome = runner.run();
      await until(async () => (await runRecord(url, identity.runId)).log.length >= 3, "B to commit three events");
      assert.equal(
        await a.server.revoke(identity.runId),
        false,
        "A holds no connection of the run: it only commits the revocation",
      );
      assert.deepEqual(
        await within(outcome, 60_000, "the runner to stop"),
        { code: 3, reason: "revoked" },
        log.join("\n"),
      );
      assert.equal((await b.server.run(identity.runId))!.revocationEpoch, 1);
    } finally {
      await close();
    }
  });
});
