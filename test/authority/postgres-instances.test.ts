import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { PostgresAuthorityStore } from "../../src/authority/postgres-store.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { RUNNER_CONNECT_PATH_PREFIX } from "../../src/transport/index.js";
import { queueOpeningCommands, SecureAuthority, unqueuedRunner } from "../security/support.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { TcpSwitch } from "../support/tcp-switch.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";

interface LoggedRow {
  source_seq: number;
  source_event_id: string;
  event_type: string;
}

interface CommandRecord {
  command_type: string;
  status: string | null;
  delivery_count: number;
}

/** What the database holds for a run, read apart from the store's code: the judge's record. */
async function record(url: string, runId: string): Promise<{ log: LoggedRow[]; commands: CommandRecord[] }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const log = (await c.query<LoggedRow>("SELECT source_seq::int, source_event_id, event_type FROM event_log WHERE run_id = $1 ORDER BY source_seq", [runId])).rows;
    const commands = (await c.query<CommandRecord>("SELECT command_type, status, delivery_count::int FROM commands WHERE run_id = $1 ORDER BY controller_seq", [runId])).rows;
    return { log, commands };
  } finally {
    await c.end();
  }
}

/**
 * A run's record is whole: its log is 1..n without a gap or a repeat and ends in one
 * run.terminal, each event reached a host callback exactly once, and every command has one
 * result. A harness effect run twice would show as a second copy of the events it emits.
 */
function assertWhole(log: LoggedRow[], commands: CommandRecord[], hostSeen: string[]): void {
  assert.ok(log.length > 3, `a run's worth of events, got ${log.length}`);
  assert.deepEqual(log.map((e) => e.source_seq), Array.from({ length: log.length }, (_, i) => i + 1), "contiguous from 1");
  assert.equal(new Set(log.map((e) => e.source_event_id)).size, log.length, "no event twice");
  assert.deepEqual(log.filter((e) => e.event_type === "run.terminal").map((e) => e.source_seq), [log.length], "one terminal, last");
  assert.deepEqual([...hostSeen].sort(), log.map((e) => e.source_event_id).sort(), "each committed event reached a host callback exactly once");
  assert.deepEqual(commands.map((c) => [c.command_type, c.status]), [["run.prepare", "completed"], ["session.open", "completed"], ["turn.start", "completed"]]);
}

describe("two authority instances on one PostgreSQL database", () => {
  let server: TestPostgres;
  const roots: string[] = [];
  before(async () => {
    server = await startTestPostgres();
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
    const hostSeen: string[] = [];
    const host = { onCommittedEvent: (e: { sourceEventId: string }) => void hostSeen.push(e.sourceEventId) };
    const a = await SecureAuthority.start({ store: storeA, ...host });
    const b = await SecureAuthority.start({ store: storeB, ...host });
    const runnerRoot = mkdtempSync(join(tmpdir(), "prp-two-instances-"));
    roots.push(runnerRoot);
    const close = async () => {
      await a.close();
      await b.close();
      await storeA.close();
      await storeB.close();
    };
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
        driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath("many-items"), delayMs: 20 }),
      });
      await queueOpeningCommands(a.server, identity);
      const outcome = runner.run();
      await until(async () => (await record(url, identity.runId)).log.length >= 3, "A to commit three events");
      assert.equal(a.server.activeRunnerConnectionCount(identity.runId), 1, "the runner is on A");
      const before = (await record(url, identity.runId)).log;
      assert.ok(!before.some((e) => e.event_type === "run.terminal"), "the drop comes mid-run");
      front.pointAt(b.port);
      await a.server.close(); // A goes away; its runner connection with it
      assert.deepEqual(await within(outcome, 60_000, "the run to be delivered"), { code: 0, reason: "run_delivered" }, log.join("\n"));
      const { log: events, commands } = await record(url, identity.runId);
      assertWhole(events, commands, hostSeen);
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
      const { runner, log } = await unqueuedRunner(b, identity, { stateDir: join(runnerRoot, identity.runId), bootstrapToken: await a.ticket(identity.runId) });
      const outcome = runner.run();
      await until(() => b.server.activeRunnerConnectionCount(identity.runId) === 1, () => `the runner to connect to B: ${log.join("\n")} / ${b.log.join("\n")}`);
      assert.equal(a.server.activeRunnerConnectionCount(identity.runId), 0);
      await queueOpeningCommands(a.server, identity); // through A only
      assert.deepEqual(await within(outcome, 60_000, "the run to be delivered"), { code: 0, reason: "run_delivered" }, log.join("\n"));
      assert.equal((await b.server.run(identity.runId))!.connectionCount, 1, "on B's first connection: B delivered them when A's NOTIFY came, not at a reconnect");
      const { log: events, commands } = await record(url, identity.runId);
      assertWhole(events, commands, hostSeen);
    } finally {
      await close();
    }
  });
});
