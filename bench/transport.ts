/**
 * `npm run bench:transport`: committed events per second end to end through the real durable
 * send path (fake harness → DurableRunner outbox append → sealed WebSocket frame → authority
 * ingest and commit → ACK → outbox trim) for 15,000 small events, with each event's latency
 * from outbox commit to ingest and to ACK, against raw `ws` loopback messages of the same size and
 * bare better-sqlite3 inserts with WAL and synchronous=FULL, all measured in this process and
 * printed as ratios; and the cost of one outbox append (`RunnerState.admit`) with 1,000 and with
 * 100,000 events pending, whose ratio must stay near 1 (no whole-state rewrite per event).
 *
 * The DurableRunner and the AuthorityServer run in this process and share its one thread; only
 * the fake harness is a child process. Every durable commit waits for fsync, so the storage
 * decides the rate: the main run keeps its SQLite files on a memory filesystem (/dev/shm, where
 * fsync costs nothing) and measures what the transport itself costs; a shorter run on the disk
 * under the temporary directory shows the rate when each of the three commits per event (runner
 * admit, authority commit, runner trim) waits for the disk. Nothing here asserts a speed.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { randomBytes, randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { WebSocket, WebSocketServer } from "ws";
import {
  DEFAULT_MAX_OUTBOX_BYTES,
  DEFAULT_P0_RESERVE_BYTES,
  RunnerState,
  STATE_FILE,
} from "../src/runner/durable/runner-state.js";
import { MAX_BATCH_EVENTS, Sealer, controlEnvelope, type RunIdentity } from "../src/transport/index.js";
import { benchIdentity, durableSend, type DurableSend } from "./durable-send.js";
import { fmt, median, percentile } from "./measure.js";

/** `node dist/bench/transport.js N` scripts about N events instead (a quick look); the figure of record is 15,000. */
const EVENTS = 3 * Math.round((process.argv[2] ? Number.parseInt(process.argv[2], 10) : 15_000) / 3);
/** Events, inserts and appends measured on the disk, where each commit waits for fsync. */
const DISK_EVENTS = 900;
/** Events in flight: the welcome's maxBatchEvents. */
const WINDOW = MAX_BATCH_EVENTS;
const ADMIT_SMALL = 1_000;
const ADMIT_LARGE = 100_000;
const ADMIT_ROUNDS = 5;

const memoryFs = existsSync("/dev/shm") ? mkdtempSync("/dev/shm/prp-bench-transport-") : null;
const disk = mkdtempSync(join(tmpdir(), "prp-bench-transport-"));
const memory = memoryFs ?? disk;
const cleanup = () => {
  if (memoryFs) rmSync(memoryFs, { recursive: true, force: true });
  rmSync(disk, { recursive: true, force: true });
};
process.once("SIGINT", () => {
  cleanup(); // the memory filesystem is RAM: leave nothing there
  process.exit(130);
});
let dirs = 0;
const freshDir = (root: string) => join(root, `d${++dirs}`);

const binding = (id: RunIdentity, maxOutboxBytes = DEFAULT_MAX_OUTBOX_BYTES) => ({
  ...id,
  maxOutboxBytes,
  p0ReserveBytes: DEFAULT_P0_RESERVE_BYTES,
});
const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;

/** Sizes on the wire of one event's sealed control envelope and of one sealed ack (the raw-ws baseline sends the same). */
function frameSizes(sample: Record<string, unknown>, id: RunIdentity): { frameBytes: number; ackFrameBytes: number } {
  const sealer = new Sealer(randomBytes(32), `sha256:${"0".repeat(64)}`, "client_to_core");
  const binding = {
    identity: id,
    connectionId: "connection_1",
    connectionLeaseId: `lease_${randomUUID()}`,
    leaseExpiresAtUnixMs: Date.now(),
  };
  const envelopeOf = (kind: "event" | "ack", payload: Record<string, unknown>) =>
    JSON.stringify(controlEnvelope(kind, binding, payload, randomUUID(), new Date().toISOString()));
  const frame = sealer.seal(envelopeOf("event", { event: sample }));
  const ackFrame = sealer.seal(envelopeOf("ack", { ackedSourceSeq: EVENTS }));
  sealer.destroy();
  if (!frame.ok || !ackFrame.ok) throw new Error("could not seal a sample frame");
  return { frameBytes: frame.value.length, ackFrameBytes: ackFrame.value.length };
}

/**
 * Raw `ws` on loopback, shaped like the transport: the client sends `count` text messages of
 * `frameBytes`, at most WINDOW unanswered, and the server answers each with one message of
 * `ackBytes`. Messages per second, timed until the last answer arrives.
 */
async function rawWs(count: number, frameBytes: number, ackBytes: number): Promise<number> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
  await new Promise<void>((resolve) => wss.once("listening", resolve));
  const ack = "a".repeat(ackBytes);
  wss.on("connection", (socket) => socket.on("message", () => socket.send(ack)));
  const port = (wss.address() as { port: number }).port;
  const client = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate: false });
  await new Promise((resolve, reject) => client.once("open", resolve).once("error", reject));
  const frame = "f".repeat(frameBytes);
  let sent = 0;
  let answered = 0;
  const start = process.hrtime.bigint();
  await new Promise<void>((resolve) => {
    const fill = () => {
      while (sent < count && sent - answered < WINDOW) {
        client.send(frame);
        sent++;
      }
    };
    client.on("message", () => {
      answered++;
      if (answered === count) resolve();
      else fill();
    });
    fill();
  });
  const elapsed = seconds(start);
  client.close();
  for (const c of wss.clients) c.terminate();
  await new Promise((resolve) => wss.close(resolve));
  return count / elapsed;
}

/** Bare better-sqlite3: one autocommitted INSERT of `rowBytes` per row, WAL, synchronous=FULL. */
function bareSqlite(root: string, count: number, rowBytes: number): number {
  const dir = freshDir(root);
  mkdirSync(dir, { mode: 0o700 });
  const db = new Database(join(dir, "bare.sqlite"));
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.exec("CREATE TABLE rows (seq INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT");
    const insert = db.prepare("INSERT INTO rows (seq, body) VALUES (?, ?)");
    const body = "r".repeat(rowBytes);
    const start = process.hrtime.bigint();
    for (let i = 1; i <= count; i++) insert.run(i, body);
    return count / seconds(start);
  } finally {
    db.close();
  }
}

/** A small event's bytes for `admit`: the outbox stores what it is given, so the size is what matters. */
const admitted = (rowBytes: number) => (seq: number) =>
  `{"sourceSeq":${seq},"pad":"${"p".repeat(Math.max(0, rowBytes - 30))}"}`;
/** 100,000 pending small events are past the default 16 MiB outbox. */
const ADMIT_OUTBOX_BYTES = 256 * 1024 * 1024;

/**
 * A closed runner state with `pending` unacknowledged events, built once on the memory
 * filesystem: the first append goes through `admit`, the rest are written in one SQLite
 * transaction (100,000 appends one by one would take longer than what they set up), and
 * `RunnerState.open` then checks every invariant of the result (contiguous outbox, sizes,
 * counters) as it does for any state it opens.
 */
function templateState(pending: number, rowBytes: number, n: number): { dir: string; n: number } {
  const dir = freshDir(memory);
  const body = admitted(rowBytes);
  const state = RunnerState.open(dir, binding(benchIdentity(n), ADMIT_OUTBOX_BYTES));
  if (!state.admit(2, "item.delta", body).ok) throw new Error("admission refused");
  state.close();
  const db = new Database(join(dir, STATE_FILE));
  db.transaction(() => {
    const insert = db.prepare(
      "INSERT INTO outbox (source_seq, priority, event_type, envelope, byte_size) VALUES (?, 2, 'item.delta', ?, ?)",
    );
    let bytes = (db.prepare("SELECT outbox_bytes AS b FROM runner_state").get() as { b: number }).b;
    for (let seq = 2; seq <= pending; seq++) {
      const envelope = body(seq);
      insert.run(seq, envelope, Buffer.byteLength(envelope));
      bytes += Buffer.byteLength(envelope);
    }
    db.prepare("UPDATE runner_state SET next_source_seq = ?, outbox_bytes = ?, peak_outbox_bytes = ?").run(
      pending + 1,
      bytes,
      bytes,
    );
  })();
  db.close();
  RunnerState.open(dir, binding(benchIdentity(n), ADMIT_OUTBOX_BYTES)).close(); // refused here if the fill broke an invariant
  return { dir, n };
}

/** A copy of a template state under `root`, opened (and checked) as a runner would open it. */
function openCopy(root: string, template: { dir: string; n: number }): RunnerState {
  const dir = freshDir(root);
  mkdirSync(dir, { mode: 0o700 });
  copyFileSync(join(template.dir, STATE_FILE), join(dir, STATE_FILE));
  return RunnerState.open(dir, binding(benchIdentity(template.n), ADMIT_OUTBOX_BYTES));
}

/**
 * Microseconds per `RunnerState.admit` with 1,000 and with 100,000 events pending: rounds of
 * `perRound` appends on each state in turn; after each round an ACK (not timed) trims back to
 * the starting count, so the pending count stays what it says. The median round of each.
 */
function admitCost(
  root: string,
  templates: Array<{ dir: string; n: number }>,
  perRound: number,
  rowBytes: number,
  rounds = ADMIT_ROUNDS,
): { small: number; large: number } {
  const states = templates.map((t) => openCopy(root, t));
  const samples: number[][] = states.map(() => []);
  const body = admitted(rowBytes);
  try {
    for (let round = 0; round < rounds; round++) {
      states.forEach((state, i) => {
        const start = process.hrtime.bigint();
        for (let k = 0; k < perRound; k++)
          if (!state.admit(2, "item.delta", body).ok) throw new Error("admission refused");
        samples[i]!.push((seconds(start) * 1e6) / perRound);
        const trimmed = state.applyAck(state.counters().ackedSourceSeq + perRound);
        if (!trimmed.ok) throw new Error(trimmed.message);
      });
    }
  } finally {
    for (const state of states) state.close();
  }
  return { small: median(samples[0]!), large: median(samples[1]!) };
}

const x = (a: number, b: number) => `${(a / b).toFixed(a / b < 0.1 ? 3 : 2)}`;

const ms = (xs: number[]) => `p50 ${percentile(xs, 0.5).toFixed(1)} ms, p99 ${percentile(xs, 0.99).toFixed(1)} ms`;

/** The end-to-end figures of one durable run: rate, sizes, and the two latencies. */
function describe(run: DurableSend, line: (what: string, rate: number, unit: string, extra?: string) => void): void {
  line(
    "end to end: harness, admit, send, ingest, commit, ack, trim",
    run.events / run.seconds,
    "events/s",
    `  (${run.seconds.toFixed(1)} s)`,
  );
  console.log(`  outbox commit -> authority ingest   ${ms(run.ingestMs)}`);
  console.log(
    `  outbox commit -> ACK at the runner  ${ms(run.ackMs)}   (the harness outruns the window: mostly queueing)`,
  );
  console.log(`  sent -> ACK at the runner           ${ms(run.sendAckMs)}   (the window's round trip)`);
}

try {
  const totalStart = process.hrtime.bigint();
  const memoryName = memoryFs ? "memory filesystem (/dev/shm: fsync is free)" : `${tmpdir()} (no /dev/shm here)`;
  console.log(
    `transport: committed events per second end to end, a DurableRunner (fake harness) and an AuthorityServer in this process (window ${WINDOW} events)`,
  );

  // Warm-up: a short run so the JIT, the codec and the SQLite statements are settled.
  await durableSend(freshDir(memory), 300, 0);

  console.log(
    `measuring ${fmt(EVENTS)} scripted events end to end on the ${memoryFs ? "memory filesystem" : "temporary directory"}…`,
  );
  const e2e = await durableSend(freshDir(memory), EVENTS / 3, 1);
  const rowBytes = Math.round(e2e.eventBytes);
  const e2eRate = e2e.events / e2e.seconds;
  const { frameBytes, ackFrameBytes } = frameSizes(e2e.sample as unknown as Record<string, unknown>, benchIdentity(1));
  const wsRate = await rawWs(e2e.events, frameBytes, ackFrameBytes);
  const sqliteRate = bareSqlite(memory, e2e.events, rowBytes);
  const line = (what: string, rate: number, unit: string, extra = "") =>
    console.log(`  ${what.padEnd(60)} ${fmt(rate).padStart(9)} ${unit}${extra}`);
  console.log(
    `\n${memoryName}: ${fmt(e2e.events)} events of ${fmt(rowBytes)} bytes on average (item.started/delta/completed; a ${fmt(frameBytes)}-byte sealed item.delta frame, a ${fmt(ackFrameBytes)}-byte sealed ack)`,
  );
  describe(e2e, line);
  line("raw ws loopback: same sizes, same window, a reply each", wsRate, "msgs/s");
  line("bare better-sqlite3 inserts, WAL, FULL, one per commit", sqliteRate, "rows/s");
  console.log(
    `  end to end / raw ws = ${x(e2eRate, wsRate)}   end to end / bare inserts = ${x(e2eRate, sqliteRate)}   (3 commits per event: / (inserts / 3) = ${x(e2eRate, sqliteRate / 3)})`,
  );

  if (memoryFs) {
    // The disk's fsync time wanders with whatever else the machine does: the bare inserts are
    // measured half before and half after the end-to-end run, and their rates averaged.
    const before = bareSqlite(disk, DISK_EVENTS / 2, rowBytes);
    const onDisk = await durableSend(freshDir(disk), DISK_EVENTS / 3, 2);
    const onDiskRate = onDisk.events / onDisk.seconds;
    const diskSqlite = (before + bareSqlite(disk, DISK_EVENTS / 2, rowBytes)) / 2;
    console.log(`\ndisk (${tmpdir()}: every commit waits for fsync): ${fmt(onDisk.events)} events`);
    describe(onDisk, line);
    line("bare better-sqlite3 inserts, WAL, FULL, one per commit", diskSqlite, "rows/s");
    console.log(
      `  end to end / bare inserts = ${x(onDiskRate, diskSqlite)}   (3 commits per event: / (inserts / 3) = ${x(onDiskRate, diskSqlite / 3)})`,
    );
  }

  console.log(
    `\noutbox append (RunnerState.admit, one transaction each) with ${fmt(ADMIT_SMALL)} vs ${fmt(ADMIT_LARGE)} events pending (median round, interleaved)`,
  );
  const templates = [templateState(ADMIT_SMALL, rowBytes, 900), templateState(ADMIT_LARGE, rowBytes, 901)];
  const inMemory = admitCost(memory, templates, 2_000, rowBytes);
  console.log(
    `  ${memoryName}: ${inMemory.small.toFixed(1)} µs vs ${inMemory.large.toFixed(1)} µs per append: ratio ${x(inMemory.large, inMemory.small)} (flat is ~1)`,
  );
  if (memoryFs) {
    const onDisk = admitCost(disk, templates, 100, rowBytes, 9);
    console.log(
      `  disk: ${onDisk.small.toFixed(0)} µs vs ${onDisk.large.toFixed(0)} µs per append: ratio ${x(onDisk.large, onDisk.small)} (flat is ~1; the fsync of each append dominates and wanders)`,
    );
  }
  console.log(`\n(${seconds(totalStart).toFixed(0)} s in all)`);
} finally {
  cleanup();
}
