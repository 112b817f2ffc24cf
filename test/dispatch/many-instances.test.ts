import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import { PrpClient } from "../../src/client/index.js";
import { TEST_SEED } from "../support/seed.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { until } from "../support/until.js";
import { killAll } from "../cli/authority-processes.js";
import { runPrp } from "../cli/run-cli.js";
import { judgeCaps, judgeExactlyOnce } from "./judges.js";
import {
  addToken,
  addWorker,
  admin,
  killPids,
  openStoreOf,
  startAuthority,
  startWorker,
  storedRecords,
  unfinishedRunnerPids,
  workerStarts,
  type StoreFlags,
  type WorkerProcess,
} from "./support.js";

const RUNS = 200;
const CAPS = { "*": 8, "team=red": 2 };

let pg: TestPostgres | undefined;
const root = mkdtempSync(join(tmpdir(), "prp-dispatch-many-"));
after(async () => {
  await pg?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("two authority instances on one PostgreSQL, four workers", () => {
  it(`run ${RUNS} queued runs each exactly once, under their caps, and leave nothing queued`, async () => {
    // The runs' labels and priorities are drawn from the seed; a failure repeats with PRP_TEST_SEED.
    console.log(`# dispatch many-instances: seed ${TEST_SEED}`);
    const plan = fc.sample(
      fc.record({ team: fc.constantFrom("red", "blue", "blue", "blue"), priority: fc.integer({ min: -5, max: 5 }) }),
      { seed: TEST_SEED, numRuns: RUNS },
    );
    pg = await startTestPostgres();
    const keyFile = join(root, "secrets", "key");
    assert.equal(runPrp(["authority", "key", "--out", keyFile]).status, 0);
    const location = await pg.database();
    const store: StoreFlags = { flags: ["--store", location, "--server-key-file", keyFile], location, keyFile };
    const children: Array<{ kill(s: NodeJS.Signals): void; exited(t?: number): Promise<number> }> = [];
    const workers: WorkerProcess[] = [];
    try {
      const a = await startAuthority(store);
      children.push(a.daemon);
      const b = await startAuthority(store);
      children.push(b.daemon);
      for (const [scope, max] of Object.entries(CAPS)) admin(store, ["cap", "set", scope, String(max)]);
      const token = addToken(store, "operate", root);
      const shapes = [
        ["w1", a.apiUrl, "os=linux,team=red"],
        ["w2", a.apiUrl, "os=linux,team=blue"],
        ["w3", b.apiUrl, "os=linux,team=red"],
        ["w4", b.apiUrl, "os=linux,team=blue"],
      ] as const;
      for (const [name, apiUrl, labels] of shapes) {
        const w = startWorker({
          apiUrl,
          credential: addWorker(store, name, root),
          dir: join(root, name),
          name,
          labels,
          maxRuns: 3,
        });
        workers.push(w);
        children.push(w);
      }
      const clients = [a.apiUrl, b.apiUrl].map(
        (baseUrl) => new PrpClient({ baseUrl, token: readFileSync(token, "utf8").trim() }),
      );
      const runIds: string[] = [];
      for (const [i, p] of plan.entries()) {
        const run = await clients[i % 2]!.createRun({
          agent: { kind: "fake", script: "happy-path" },
          prompt: "Play the script.",
          labels: { os: "linux", team: p.team },
          priority: p.priority,
        });
        runIds.push(run.run.runId);
      }
      const reader = await openStoreOf(store);
      try {
        await until(
          async () => (await reader.listRuns({ state: "ended", limit: 500 })).runs.length === RUNS,
          () => `every run to end; workers: ${workers.map((w) => w.stderr().slice(-300)).join(" | ")}`,
          15 * 60_000,
        );
        const { logs, dispatch } = await storedRecords(reader, runIds);
        const starts = workerStarts(workers);
        assert.deepEqual(judgeExactlyOnce(runIds, logs, starts, dispatch), []);
        assert.deepEqual(judgeCaps([...dispatch.values()], CAPS), []);
        assert.equal((await reader.queuedRuns(10)).length, 0, "nothing left queued");
        for (const d of dispatch.values()) assert.equal(d.endReason, null, `${d.runId} ended by its own terminal`);
        const succeeded = [...logs.values()].filter((log) =>
          log.at(-1)?.envelope.includes('"runTerminalState":"succeeded"'),
        );
        assert.equal(succeeded.length, RUNS, "every run succeeded");
        const byWorker = new Set(starts.map((s) => s.worker));
        assert.equal(byWorker.size, 4, "every worker ran some");
      } finally {
        await reader.close();
      }
      // A drain: each worker stops claiming and exits 0 once its runners are done.
      for (const w of workers) w.kill("SIGTERM");
      for (const w of workers) assert.equal(await w.exited(60_000), 0, w.stderr().slice(-1000));
    } finally {
      killPids(unfinishedRunnerPids(workers));
      await killAll(children as never);
    }
  });
});
