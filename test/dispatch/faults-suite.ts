import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, describe, it } from "node:test";
import { PrpClient } from "../../src/client/index.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { until } from "../support/until.js";
import { killAll, type Child } from "../cli/authority-processes.js";
import { judgeExactlyOnce } from "./judges.js";
import {
  addToken,
  addWorker,
  admin,
  killPids,
  openStoreOf,
  startFixedAuthority,
  startWorker,
  storedRecords,
  type FixedAuthority,
  unfinishedRunnerPids,
  workerStarts,
  type StoreFlags,
  type WorkerProcess,
} from "./support.js";

/** Where a scenario's store lives: a fresh one per scenario, and what can be done to its database. */
export interface Backend {
  kind: string;
  /** A fresh store, named by the flags `prp authority …` takes (its key file made here). */
  newStore(root: string): Promise<StoreFlags>;
  /** The database becomes unreachable, then reachable again (PostgreSQL only). */
  outage?: { pause(): Promise<void>; resume(): Promise<void> };
}

/** A short grace, so that a lost worker's claims come back within a test. */
const GRACE = ["--worker-grace-ms", "2000", "--worker-heartbeat-ms", "500"];

/** One scenario's processes and records, all stopped and removed by `close`. */
class Scenario {
  readonly children: Child[] = [];
  readonly workers: WorkerProcess[] = [];
  readonly root = mkdtempSync(join(tmpdir(), "prp-dispatch-fault-"));
  store!: StoreFlags;
  reader!: AuthorityStore;
  token!: string;

  async open(backend: Backend): Promise<void> {
    this.store = await backend.newStore(this.root);
    this.token = readFileSync(addToken(this.store, "operate", this.root), "utf8").trim();
  }

  client(apiUrl: string): PrpClient {
    return new PrpClient({ baseUrl: apiUrl, token: this.token });
  }

  /** An authority on fixed ports (so that it can come back where it was), and a client of its API. */
  async authority(): Promise<{ authority: FixedAuthority; client: PrpClient }> {
    const authority = await startFixedAuthority(this.store, GRACE);
    this.children.push(authority.daemon);
    return { authority, client: this.client(authority.apiUrl) };
  }

  /** The workers that started a runner for `runId`, from their own records. */
  startedBy(runId: string): string[] {
    return workerStarts(this.workers)
      .filter((x) => x.runId === runId)
      .map((x) => x.worker);
  }

  worker(apiUrl: string, name: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): WorkerProcess {
    const w = startWorker(
      {
        apiUrl,
        credential: addWorker(this.store, name, this.root),
        dir: join(this.root, name),
        name,
        labels: "os=linux",
        maxRuns: 2,
      },
      extra,
      env,
    );
    this.workers.push(w);
    this.children.push(w);
    return w;
  }

  async submit(client: PrpClient, n: number, script: string): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++)
      ids.push(
        (
          await client.createRun({
            agent: { kind: "fake", script },
            prompt: "Play the script.",
            labels: { os: "linux" },
          })
        ).run.runId,
      );
    return ids;
  }

  async readerOpen(): Promise<AuthorityStore> {
    this.reader ??= await openStoreOf(this.store);
    return this.reader;
  }

  /** Waits (bounded) until every run is in `state`. */
  async allIn(runIds: readonly string[], state: "running" | "ended"): Promise<void> {
    const reader = await this.readerOpen();
    await until(
      async () => {
        for (const runId of runIds) {
          const run = await reader.run(runId);
          const [d] = await reader.dispatch([runId]);
          const ended = run?.terminalSourceSeq !== null || d?.state === "ended";
          if (state === "ended" ? !ended : (run?.ackedSourceSeq ?? 0) === 0) return false;
        }
        return true;
      },
      () =>
        `every run ${state}; workers: ${this.workers.map((w) => `${w.name}: ${w.stderr().slice(-400)}`).join(" | ")}`,
      180_000,
    );
  }

  /** The exactly-once judge over the stored logs and every worker's record; nothing left queued. */
  async judge(runIds: readonly string[]): Promise<void> {
    const reader = await this.readerOpen();
    const { logs, dispatch } = await storedRecords(reader, runIds);
    assert.deepEqual(judgeExactlyOnce(runIds, logs, workerStarts(this.workers), dispatch), []);
    assert.equal((await reader.queuedRuns(10)).length, 0, "nothing left queued");
  }

  async close(): Promise<void> {
    killPids(unfinishedRunnerPids(this.workers));
    await killAll(this.children);
    await this.reader?.close();
    rmSync(this.root, { recursive: true, force: true });
  }
}

async function scenario(backend: Backend, body: (s: Scenario) => Promise<void>): Promise<void> {
  const s = new Scenario();
  try {
    await s.open(backend);
    await body(s);
  } finally {
    await s.close();
  }
}

/** Preloaded into a worker: its clock, and only its clock, runs ten minutes ahead. */
function clockAheadModule(dir: string): string {
  const file = join(dir, "clock-ahead.mjs");
  writeFileSync(
    file,
    `const ahead = 10 * 60 * 1000;
const RealDate = Date;
const now = RealDate.now;
class AheadDate extends RealDate {
  constructor(...args) { if (args.length === 0) super(now() + ahead); else super(...args); }
  static now() { return now() + ahead; }
}
globalThis.Date = AheadDate;
`,
  );
  return pathToFileURL(file).href;
}

/** The run queue under faults, judged from the run logs and the workers' own records. */
export function dispatchFaultSuite(backend: Backend, cleanup: () => Promise<void>): void {
  after(cleanup);
  describe(`the run queue under faults, ${backend.kind}`, () => {
    it("a worker SIGKILLed mid-run: its started runs finish once, new runs go to another worker", async () => {
      await scenario(backend, async (s) => {
        const { authority, client } = await s.authority();
        const w1 = s.worker(authority.apiUrl, "w1");
        // These runs wait for an interrupt: they are mid-run until the test cancels them.
        const waiting = await s.submit(client, 2, "interrupted");
        await s.allIn(waiting, "running");
        w1.kill("SIGKILL");
        assert.equal(await w1.exited(), 137);
        const later = await s.submit(client, 2, "happy-path");
        s.worker(authority.apiUrl, "w2");
        await s.allIn(later, "ended");
        // The killed worker's runners outlived it and still serve their runs: a cancel reaches them.
        for (const runId of waiting) await client.cancelRun(runId);
        await s.allIn(waiting, "ended");
        await s.judge([...waiting, ...later]);
        for (const runId of waiting)
          assert.deepEqual(s.startedBy(runId), ["w1"], "a started run is never started again");
      });
    });

    it("an authority SIGKILLed while its workers claim: nothing run twice, nothing lost", async () => {
      await scenario(backend, async (s) => {
        const { authority, client } = await s.authority();
        s.worker(authority.apiUrl, "w1");
        s.worker(authority.apiUrl, "w2");
        const runs = await s.submit(client, 8, "happy-path");
        const reader = await s.readerOpen();
        // The point: claims under way, and runs still queued.
        await until(async () => {
          const rows = await reader.dispatch(runs);
          return rows.some((d) => d.state !== "queued") && rows.some((d) => d.state === "queued");
        }, "claims under way with runs still queued");
        authority.daemon.kill("SIGKILL");
        await authority.daemon.exited();
        await authority.restart();
        s.children.push(authority.daemon);
        await s.allIn(runs, "ended");
        await s.judge(runs);
      });
    });

    if (backend.outage) {
      const outage = backend.outage;
      it("the database unreachable during claims: the workers retry, and every run ends once", async () => {
        await scenario(backend, async (s) => {
          const { authority, client } = await s.authority();
          const runs = await s.submit(client, 6, "happy-path");
          s.worker(authority.apiUrl, "w1");
          const reader = await s.readerOpen();
          await until(async () => (await reader.dispatch(runs)).some((d) => d.state !== "queued"), "a first claim");
          await reader.close();
          s.reader = undefined as never;
          await outage.pause();
          try {
            // Polls fail meanwhile: the worker keeps its requestId and retries.
            await until(() => /retry|unavailable|503/i.test(s.workers[0]!.stderr()), "the worker to retry a poll");
          } finally {
            await outage.resume();
          }
          await s.allIn(runs, "ended");
          await s.judge(runs);
        });
      });
    }

    it("a worker revoked mid-run: it claims nothing more, its runs finish, others take the queue", async () => {
      await scenario(backend, async (s) => {
        const { authority, client } = await s.authority();
        const w1 = s.worker(authority.apiUrl, "w1");
        const waiting = await s.submit(client, 2, "interrupted");
        await s.allIn(waiting, "running");
        admin(s.store, ["worker", "revoke", "w1"]);
        const queued = await s.submit(client, 2, "happy-path");
        s.worker(authority.apiUrl, "w2");
        await s.allIn(queued, "ended");
        for (const runId of waiting) await client.cancelRun(runId);
        await s.allIn(waiting, "ended");
        assert.equal(await w1.exited(), 1, "a revoked worker exits 1 once its runners are done");
        assert.match(w1.stderr(), /revoked|token_invalid/);
        await s.judge([...waiting, ...queued]);
        for (const runId of queued) assert.deepEqual(s.startedBy(runId), ["w2"]);
      });
    });

    it("a worker whose clock runs ten minutes ahead works as any other: the authority's clock decides", async () => {
      await scenario(backend, async (s) => {
        const { authority, client } = await s.authority();
        mkdirSync(s.root, { recursive: true });
        s.worker(authority.apiUrl, "w1", [], { NODE_OPTIONS: `--import=${clockAheadModule(s.root)}` });
        const runs = await s.submit(client, 3, "happy-path");
        await s.allIn(runs, "ended");
        await s.judge(runs);
        const reader = await s.readerOpen();
        const [worker] = await reader.workers();
        const skew = Math.abs((worker?.lastSeenAtUnixMs ?? 0) - Date.now());
        assert.ok(skew < 60_000, `last seen by the authority's clock, not the worker's (${skew} ms off)`);
      });
    });
  });
}
