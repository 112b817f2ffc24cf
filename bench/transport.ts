/**
 * `npm run bench:transport`: committed events per second end to end through the durable
 * transport (runner outbox append → sealed WebSocket frame → authority ingest and commit → ACK →
 * outbox trim) for 100,000 small events, against raw `ws` loopback messages of the same size and
 * bare better-sqlite3 inserts with WAL and synchronous=FULL, all measured in this process and
 * printed as ratios; and the cost of one outbox append (`RunnerState.admit`) with 1,000 and with
 * 100,000 events pending, whose ratio must stay near 1 (no whole-state rewrite per event).
 *
 * The runner side runs in this process (a RunnerState, the durable runner's outbox sink and
 * `openRunnerChannel`), so the figure is the transport's, not the fake harness's. Runner and
 * authority share this one thread. Every durable commit waits for fsync, so the storage decides
 * the rate: the 100,000-event run keeps its SQLite files on a memory filesystem (/dev/shm, where
 * fsync costs nothing) and measures what the transport itself costs; a shorter run on the disk
 * under the temporary directory shows the rate when each of the three commits per event (runner
 * admit, authority commit, runner trim) waits for the disk. Nothing here asserts a speed.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { WebSocket, WebSocketServer } from "ws";
import { AuthorityServer } from "../src/authority/server.js";
import { LeaseKeeper } from "../src/runner/durable/lease-keeper.js";
import { outboxSink } from "../src/runner/durable/outbox-sink.js";
import { DEFAULT_MAX_OUTBOX_BYTES, DEFAULT_P0_RESERVE_BYTES, RunnerState, STATE_FILE } from "../src/runner/durable/runner-state.js";
import { MAX_BATCH_EVENTS, Sealer, controlEnvelope, dial, openRunnerChannel, parseConnectUrl, resolveEndpoint, systemTimers, type RunIdentity } from "../src/transport/index.js";
import { fmt } from "./measure.js";

/** `node dist/bench/transport.js N` measures N events instead (a quick look); the figure of record is 100,000. */
const EVENTS = process.argv[2] ? Number.parseInt(process.argv[2], 10) : 100_000;
/** Events, inserts and appends measured on the disk, where each commit waits for fsync. */
const DISK_EVENTS = 2_000;
/** Events in flight: the welcome's maxBatchEvents. */
const WINDOW = MAX_BATCH_EVENTS;
const ADMIT_SMALL = 1_000;
const ADMIT_LARGE = 100_000;
const ADMIT_ROUNDS = 5;
const BUILD = { version: "bench", digest: `sha256:${"be".repeat(32)}` };

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

const identity = (n: number): RunIdentity => ({
  runnerInstanceId: `runner_bench_${n}`, environmentLeaseId: `env_bench_${n}`, runId: `run_bench_${n}`,
  normalizedSessionId: `session_bench_${n}`, turnId: `turn_bench_${n}`, itemId: `item_bench_${n}`,
});
const binding = (id: RunIdentity, maxOutboxBytes = DEFAULT_MAX_OUTBOX_BYTES) => ({ ...id, maxOutboxBytes, p0ReserveBytes: DEFAULT_P0_RESERVE_BYTES });
const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;

interface EndToEnd {
  events: number;
  seconds: number;
  eventBytes: number;
  frameBytes: number;
  ackFrameBytes: number;
}

/**
 * One run through the whole transport: an AuthorityServer on 127.0.0.1 with its SQLite store,
 * a runner that appends each item.delta to its SQLite outbox (the durable runner's sink: encode,
 * admit, then send) and sends it sealed, at most WINDOW unacknowledged; every ACK trims the
 * outbox in its own transaction, as the durable runner does, and its lease keeper renews the
 * default 60 s lease. Timed from the first append to the ACK of the last event applied.
 */
async function endToEnd(root: string, events: number, n: number): Promise<EndToEnd> {
  const id = identity(n);
  const authority = AuthorityServer.open({ stateDir: freshDir(root), runnerVersion: BUILD.version, runnerDigest: BUILD.digest });
  const state = RunnerState.open(freshDir(root), binding(id));
  try {
    await authority.listen(0);
    const registered = await authority.registerRun(id);
    if (!registered.ok) throw new Error(registered.error.message);
    const ticket = await authority.issueBootstrapTicket(id.runId, 30_000);
    if (!ticket.ok) throw new Error(ticket.error.message);
    const endpoint = parseConnectUrl(authority.connectUrl(id.runId));
    if (!endpoint.ok) throw new Error(endpoint.error.message);
    const resolved = await resolveEndpoint(endpoint.value);
    if (!resolved.ok) throw new Error(resolved.error.message);
    const ws = await dial(resolved.value);
    if (!ws.ok) throw new Error(ws.error.message);

    let acked = 0;
    let wake: (() => void) | null = null;
    let failure: Error | null = null;
    const stop = (err: Error) => {
      failure ??= err;
      wake?.();
    };
    let keeper: LeaseKeeper | null = null;
    const opened = await openRunnerChannel(ws.value, {
      credential: { kind: "bootstrap", token: ticket.value.token },
      identity: id, runnerVersion: BUILD.version, runnerDigest: BUILD.digest,
      resume: { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 },
      handlers: {
        onEnvelope: (envelope) => {
          if (envelope.kind === "lease_renewed") return keeper?.renewed(envelope.payload);
          if (envelope.kind !== "ack") return;
          const n = envelope.payload.ackedSourceSeq as number;
          const applied = state.applyAck(n);
          if (!applied.ok) return stop(new Error(`${applied.code}: ${applied.message}`));
          acked = n;
          const w = wake;
          wake = null;
          w?.();
        },
        onClose: (diagnostic) => {
          keeper?.stop();
          if (diagnostic && acked < events) stop(new Error(`the connection closed: ${diagnostic.code}: ${diagnostic.message}`));
        },
      },
    });
    if (!opened.ok) throw new Error(opened.error.message);
    const channel = opened.value.channel;
    const { welcome } = opened.value;
    keeper = new LeaseKeeper({ channel, lease: welcome.lease, renewalVersion: welcome.payload.connectionLeaseRenewalVersion, timers: systemTimers, onLease: () => {} });
    let eventBytes = 0;
    let sample = "";
    const sink = outboxSink(state, id, {
      send: (envelope) => {
        eventBytes += Buffer.byteLength(envelope);
        sample ||= envelope;
        const sent = channel.send("event", { event: JSON.parse(envelope) as Record<string, unknown> });
        if (!sent.ok) stop(new Error(sent.error.message));
      },
      refused: (eventType, admission) => stop(new Error(`${eventType} refused: ${admission.code}`)),
      waitForRoom: () => {},
    });

    let produced = 0;
    const start = process.hrtime.bigint();
    while (acked < events && failure === null) {
      while (produced < events && produced - acked < WINDOW) {
        produced++;
        sink.emit("item.delta", { text: `token ${produced} ` }, { turnId: id.turnId, itemId: id.itemId });
      }
      if (acked < events) await new Promise<void>((resolve) => (wake = resolve));
    }
    const elapsed = seconds(start);
    channel.close();
    if (failure) throw failure;

    const counters = state.counters();
    const run = await authority.run(id.runId);
    if (counters.ackedSourceSeq !== events || counters.outboxBytes !== 0 || run?.ackedSourceSeq !== events) {
      throw new Error(`the run did not end committed and trimmed: runner ack ${counters.ackedSourceSeq}, outbox ${counters.outboxBytes} bytes, authority cursor ${run?.ackedSourceSeq}`);
    }
    // The sizes on the wire: one event's sealed control envelope, and one sealed ack.
    const sealer = new Sealer(randomBytes(32), `sha256:${"0".repeat(64)}`, "client_to_core");
    const envelopeOf = (kind: "event" | "ack", payload: Record<string, unknown>) =>
      JSON.stringify(controlEnvelope(kind, opened.value.welcome.binding, payload, "00000000-0000-4000-8000-000000000000", new Date().toISOString()));
    const frame = sealer.seal(envelopeOf("event", { event: JSON.parse(sample) }));
    const ackFrame = sealer.seal(envelopeOf("ack", { ackedSourceSeq: events }));
    sealer.destroy();
    if (!frame.ok || !ackFrame.ok) throw new Error("could not seal a sample frame");
    return { events, seconds: elapsed, eventBytes: eventBytes / events, frameBytes: frame.value.length, ackFrameBytes: ackFrame.value.length };
  } finally {
    state.close();
    await authority.close();
  }
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
const admitted = (rowBytes: number) => (seq: number) => `{"sourceSeq":${seq},"pad":"${"p".repeat(Math.max(0, rowBytes - 30))}"}`;
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
  const state = RunnerState.open(dir, binding(identity(n), ADMIT_OUTBOX_BYTES));
  if (!state.admit(2, "item.delta", body).ok) throw new Error("admission refused");
  state.close();
  const db = new Database(join(dir, STATE_FILE));
  db.transaction(() => {
    const insert = db.prepare("INSERT INTO outbox (source_seq, priority, event_type, envelope, byte_size) VALUES (?, 2, 'item.delta', ?, ?)");
    let bytes = (db.prepare("SELECT outbox_bytes AS b FROM runner_state").get() as { b: number }).b;
    for (let seq = 2; seq <= pending; seq++) {
      const envelope = body(seq);
      insert.run(seq, envelope, Buffer.byteLength(envelope));
      bytes += Buffer.byteLength(envelope);
    }
    db.prepare("UPDATE runner_state SET next_source_seq = ?, outbox_bytes = ?, peak_outbox_bytes = ?").run(pending + 1, bytes, bytes);
  })();
  db.close();
  RunnerState.open(dir, binding(identity(n), ADMIT_OUTBOX_BYTES)).close(); // refused here if the fill broke an invariant
  return { dir, n };
}

/** A copy of a template state under `root`, opened (and checked) as a runner would open it. */
function openCopy(root: string, template: { dir: string; n: number }): RunnerState {
  const dir = freshDir(root);
  mkdirSync(dir, { mode: 0o700 });
  copyFileSync(join(template.dir, STATE_FILE), join(dir, STATE_FILE));
  return RunnerState.open(dir, binding(identity(template.n), ADMIT_OUTBOX_BYTES));
}

/**
 * Microseconds per `RunnerState.admit` with 1,000 and with 100,000 events pending: rounds of
 * `perRound` appends on each state in turn; after each round an ACK (not timed) trims back to
 * the starting count, so the pending count stays what it says. The median round of each.
 */
function admitCost(root: string, templates: Array<{ dir: string; n: number }>, perRound: number, rowBytes: number, rounds = ADMIT_ROUNDS): { small: number; large: number } {
  const states = templates.map((t) => openCopy(root, t));
  const samples: number[][] = states.map(() => []);
  const body = admitted(rowBytes);
  try {
    for (let round = 0; round < rounds; round++) {
      states.forEach((state, i) => {
        const start = process.hrtime.bigint();
        for (let k = 0; k < perRound; k++) if (!state.admit(2, "item.delta", body).ok) throw new Error("admission refused");
        samples[i]!.push((seconds(start) * 1e6) / perRound);
        const trimmed = state.applyAck(state.counters().ackedSourceSeq + perRound);
        if (!trimmed.ok) throw new Error(trimmed.message);
      });
    }
  } finally {
    for (const state of states) state.close();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { small: median(samples[0]!), large: median(samples[1]!) };
}

const x = (a: number, b: number) => `${(a / b).toFixed(a / b < 0.1 ? 3 : 2)}`;

try {
  const totalStart = process.hrtime.bigint();
  const memoryName = memoryFs ? "memory filesystem (/dev/shm: fsync is free)" : `${tmpdir()} (no /dev/shm here)`;
  console.log(`transport: committed events per second end to end, runner and authority in this process (window ${WINDOW} events)`);

  // Warm-up: a short run so the JIT, the codec and the SQLite statements are settled.
  await endToEnd(memory, 1_000, 0);

  console.log(`measuring ${fmt(EVENTS)} events end to end on the ${memoryFs ? "memory filesystem" : "temporary directory"} (about a minute here)…`);
  const e2e = await endToEnd(memory, EVENTS, 1);
  const rowBytes = Math.round(e2e.eventBytes);
  const e2eRate = e2e.events / e2e.seconds;
  const wsRate = await rawWs(EVENTS, e2e.frameBytes, e2e.ackFrameBytes);
  const sqliteRate = bareSqlite(memory, EVENTS, rowBytes);
  const line = (what: string, rate: number, unit: string, extra = "") => console.log(`  ${what.padEnd(56)} ${fmt(rate).padStart(9)} ${unit}${extra}`);
  console.log(`\n${memoryName}: ${fmt(e2e.events)} item.delta events of ${fmt(rowBytes)} bytes (a ${fmt(e2e.frameBytes)}-byte sealed frame, a ${fmt(e2e.ackFrameBytes)}-byte sealed ack)`);
  line("end to end: append, seal, ingest, commit, ack, trim", e2eRate, "events/s", `  (${e2e.seconds.toFixed(1)} s)`);
  line("raw ws loopback: same sizes, same window, a reply each", wsRate, "msgs/s");
  line("bare better-sqlite3 inserts, WAL, FULL, one per commit", sqliteRate, "rows/s");
  console.log(`  end to end / raw ws = ${x(e2eRate, wsRate)}   end to end / bare inserts = ${x(e2eRate, sqliteRate)}   (3 commits per event: / (inserts / 3) = ${x(e2eRate, sqliteRate / 3)})`);

  if (memoryFs) {
    // The disk's fsync time wanders with whatever else the machine does: the bare inserts are
    // measured half before and half after the end-to-end run, and their rates averaged.
    const before = bareSqlite(disk, DISK_EVENTS / 2, rowBytes);
    const onDisk = await endToEnd(disk, DISK_EVENTS, 2);
    const onDiskRate = onDisk.events / onDisk.seconds;
    const diskSqlite = (before + bareSqlite(disk, DISK_EVENTS / 2, rowBytes)) / 2;
    console.log(`\ndisk (${tmpdir()}: every commit waits for fsync): ${fmt(DISK_EVENTS)} events`);
    line("end to end: append, seal, ingest, commit, ack, trim", onDiskRate, "events/s", `  (${onDisk.seconds.toFixed(1)} s)`);
    line("bare better-sqlite3 inserts, WAL, FULL, one per commit", diskSqlite, "rows/s");
    console.log(`  end to end / bare inserts = ${x(onDiskRate, diskSqlite)}   (3 commits per event: / (inserts / 3) = ${x(onDiskRate, diskSqlite / 3)})`);
  }

  console.log(`\noutbox append (RunnerState.admit, one transaction each) with ${fmt(ADMIT_SMALL)} vs ${fmt(ADMIT_LARGE)} events pending (median round, interleaved)`);
  const templates = [templateState(ADMIT_SMALL, rowBytes, 900), templateState(ADMIT_LARGE, rowBytes, 901)];
  const inMemory = admitCost(memory, templates, 2_000, rowBytes);
  console.log(`  ${memoryName}: ${inMemory.small.toFixed(1)} µs vs ${inMemory.large.toFixed(1)} µs per append: ratio ${x(inMemory.large, inMemory.small)} (flat is ~1)`);
  if (memoryFs) {
    const onDisk = admitCost(disk, templates, 100, rowBytes, 9);
    console.log(`  disk: ${onDisk.small.toFixed(0)} µs vs ${onDisk.large.toFixed(0)} µs per append: ratio ${x(onDisk.large, onDisk.small)} (flat is ~1; the fsync of each append dominates and wanders)`);
  }
  console.log(`\n(${seconds(totalStart).toFixed(0)} s in all)`);
} finally {
  cleanup();
}
