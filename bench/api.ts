/**
 * `npm run bench:api`: F SSE followers of one live run that commits N events, through the HTTP
 * API v1's event stream (src/api/event-feed.ts: one reader per run, the same bytes to every
 * follower). It prints the authority's added CPU per event per follower as a ratio to the
 * event's ingest CPU (target ≤ 0.1), and commit → delivered-to-follower latency (p50, p99).
 * Ratios measured in one run of this process; nothing here asserts a speed.
 *
 * One process: an AuthorityServer over SQLite in a temp dir and the ApiServer on the same store,
 * each commit waking the run's followers as `prp authority serve --api` wires it; the runner
 * (the real runner side of the secure channel, authority-runners.ts) and the followers
 * (api-followers.ts) on worker threads of their own, so that the CPU of the authority's thread
 * (/proc/thread-self/stat, bench/cpu.ts) is the authority's and the API's alone.
 *
 *   warm-up: one run of min(N, 2000) events, 0 followers, not counted (lets the JIT settle)
 *   phase A: one run of N events, 0 followers      → CPU_A / N = the ingest CPU per event
 *   phase B: one run of N events, F followers      → (CPU_B − CPU_A) / (N × F) per event per follower
 *   phase A again, after B: CPU_A is the mean of the two A runs
 *   ratio = ((CPU_B − CPU_A) / (N × F)) / (CPU_A / N)
 *
 *   node dist/bench/api.js [--events N] [--followers F]   (defaults 10000 and 100)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { ApiServer, type ApiServerHandle } from "../src/api/server.js";
import { newApiToken } from "../src/api/tokens.js";
import { AuthorityServer } from "../src/authority/server.js";
import { ServerKey } from "../src/authority/server-key.js";
import { SqliteAuthorityStore } from "../src/authority/sqlite-store.js";
import type { AuthorityStore } from "../src/authority/store.js";
import type { RunnerPlan, RunnersMessage } from "./authority-runners.js";
import type { FollowersMessage, FollowersPlan } from "./api-followers.js";
import { stamp } from "./api-followers.js";
import { cpuMark, cpuSince, type CpuSpent } from "./cpu.js";
import { BUILD, benchIdentity } from "./durable-send.js";
import { fmt } from "./measure.js";

const { values: args } = parseArgs({
  options: {
    events: { type: "string", default: "10000" },
    followers: { type: "string", default: "100" },
  },
});
const EVENTS = Number.parseInt(args.events!, 10);
const FOLLOWERS = Number.parseInt(args.followers!, 10);
if (!(EVENTS > 0 && FOLLOWERS > 0)) {
  console.error("usage: node dist/bench/api.js [--events N>0] [--followers F>0]");
  process.exit(2);
}
const WARM_UP_EVENTS = Math.min(EVENTS, 2_000);

/** This runner renews no lease: one lease outlasts the run. */
const LEASE_TTL_MS = 3_600_000;

/** A worker's next message of `kind`, or its failure. */
function message<M extends { kind: string }>(worker: Worker, kind: M["kind"]): Promise<M> {
  return new Promise<M>((resolve, reject) => {
    const onMessage = (m: M & { error?: string }) => {
      worker.off("error", reject);
      if (m.kind === kind) resolve(m);
      else reject(new Error(m.kind === "failed" ? m.error : `${m.kind}, not ${kind}`));
    };
    worker.once("message", onMessage);
    worker.once("error", reject);
  });
}

interface Phase {
  seconds: number;
  /** The authority's thread (authority and API) from go to the last event delivered, and the process. */
  cpu: CpuSpent;
  runnerMicros: number | null;
  followersMicros: number | null;
  /** Commit → delivered, one sample per event per follower. */
  latencyMs: Float64Array;
  failures: string[];
}

class Bench {
  private readonly committedAt = new Map<string, Float64Array>();
  private api: ApiServerHandle | undefined;
  private readonly server: AuthorityServer;
  private apiToken = "";
  private runs = 0;

  constructor(private readonly store: SqliteAuthorityStore) {
    this.server = AuthorityServer.open({
      store: this.stamped(store),
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      leaseTtlMs: LEASE_TTL_MS,
      log: () => undefined,
      // As `prp authority serve --api`: told after each commit, outside its transaction.
      afterCommit: (runIds) => runIds.forEach((runId) => this.api?.committed(runId)),
    });
  }

  /**
   * The store, stamping each committed event when its group commit returns: after COMMIT, and
   * before a reader that waited for the transaction has written the rows it then reads (that
   * reader's own await of the read comes later), and before afterCommit wakes the readers.
   */
  private stamped(store: SqliteAuthorityStore): AuthorityStore {
    const commitEvents: AuthorityStore["commitEvents"] = async (items, nowMs) => {
      const results = await store.commitEvents(items, nowMs);
      const at = stamp();
      results.forEach((r, i) => {
        const { runId, event } = items[i]!;
        const times = this.committedAt.get(runId);
        if (r.ok && times && event.sourceSeq < times.length) times[event.sourceSeq] = at;
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

  async start(): Promise<void> {
    const runnerUrl = await this.server.listen(0);
    this.api = await ApiServer.start({
      store: this.store,
      host: "127.0.0.1",
      port: 0,
      runnerConnectUrl: runnerUrl,
      onError: (err) => console.error(`api: ${err.message}`),
    });
    const token = newApiToken("read", { label: "bench:api", nowMs: Date.now() });
    const inserted = await this.store.insertApiToken(token.row);
    if (!inserted.ok) throw new Error(inserted.error.message);
    this.apiToken = token.token;
  }

  async close(): Promise<void> {
    await this.api?.close();
    await this.server.close();
  }

  /** One run of `events` events with `followers` SSE followers (0: none, no follower thread). */
  async phase(events: number, followers: number): Promise<Phase> {
    const id = benchIdentity(++this.runs);
    const registered = await this.server.registerRun(id);
    if (!registered.ok) throw new Error(registered.error.message);
    const ticket = await this.server.issueBootstrapTicket(id.runId, 60_000);
    if (!ticket.ok) throw new Error(ticket.error.message);
    const committedAt = new Float64Array(events + 1);
    this.committedAt.set(id.runId, committedAt);

    const plan: RunnerPlan = { url: this.server.connectUrl(id.runId), id, token: ticket.value.token };
    const runner = new Worker(new URL("./authority-runners.js", import.meta.url), {
      workerData: { runners: [plan], events },
    });
    const follower =
      followers > 0
        ? new Worker(new URL("./api-followers.js", import.meta.url), {
            workerData: {
              url: `${this.api!.url}/v1/runs/${encodeURIComponent(id.runId)}/events`,
              token: this.apiToken,
              followers,
              events,
            } satisfies FollowersPlan,
          })
        : undefined;
    // Listening from the start: a worker's message with no listener yet would be lost.
    const runnerConnected = message<RunnersMessage>(runner, "connected");
    const followersConnected = follower && message<FollowersMessage>(follower, "connected");
    try {
      await runnerConnected;
      if (followersConnected) {
        await followersConnected;
        // Each follower's headers went out just before the feed took it on: let every one join.
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const delivered = follower ? message<FollowersMessage>(follower, "done") : undefined;
      // A followers' failure while the runner still runs is thrown below, when it is awaited.
      delivered?.catch(() => undefined);
      const start = stamp();
      const mark = cpuMark();
      runner.postMessage("go");
      const ran = await message<RunnersMessage>(runner, "done");
      const got = await delivered;
      const cpu = cpuSince(mark);
      const seconds = (stamp() - start) / 1000;
      if (ran.kind !== "done" || (got && got.kind !== "done")) throw new Error("unreachable");
      const latencyMs = new Float64Array(got ? followers * events : 0);
      if (got?.kind === "done")
        got.arrivals.forEach((arrivals, f) => {
          for (let seq = 1; seq <= events; seq++) latencyMs[f * events + seq - 1] = arrivals[seq]! - committedAt[seq]!;
        });
      return {
        seconds,
        cpu,
        runnerMicros: ran.cpuMicros,
        followersMicros: got?.kind === "done" ? got.cpuMicros : null,
        latencyMs,
        failures: got?.kind === "done" ? got.failures : [],
      };
    } finally {
      this.committedAt.delete(id.runId);
      await runner.terminate();
      await follower?.terminate();
    }
  }
}

const µs = (micros: number | null, per: number) => (micros === null ? "n/a" : `${(micros / per).toFixed(1)} µs`);

function printPhase(name: string, p: Phase, events: number): void {
  const machine =
    p.cpu.machineBusy === null
      ? ""
      : `; machine busy ${(p.cpu.machineBusy * 100).toFixed(0)}% of its ${p.cpu.cores} cores`;
  console.log(
    `${name}: ${fmt(events)} events in ${p.seconds.toFixed(2)} s (${fmt(events / p.seconds)} events/s); CPU per event: authority thread ${µs(p.cpu.threadMicros, events)}, runner thread ${µs(p.runnerMicros, events)}` +
      (p.followersMicros === null ? "" : `, followers' thread ${µs(p.followersMicros, events)}`) +
      `, whole process ${µs(p.cpu.processMicros, events)}${machine}`,
  );
}

const root = mkdtempSync(join(tmpdir(), "prp-bench-api-"));
const store = SqliteAuthorityStore.open(join(root, "sqlite"), { serverKey: ServerKey.generate() });
const bench = new Bench(store);
let failed = false;
try {
  console.log(
    `bench:api: ${fmt(EVENTS)} events × ${FOLLOWERS} SSE followers of one live run (--events ${EVENTS} --followers ${FOLLOWERS}); SQLite on disk under ${tmpdir()}; runner and followers on worker threads; warm-up ${fmt(WARM_UP_EVENTS)} events, not counted; no random input (no seed): every run sends the same events`,
  );
  await bench.start();
  await bench.phase(WARM_UP_EVENTS, 0);
  // A on both sides of B: a machine that got busier or quieter during the run moves both alike.
  const a1 = await bench.phase(EVENTS, 0);
  printPhase("phase A, 0 followers", a1, EVENTS);
  const b = await bench.phase(EVENTS, FOLLOWERS);
  printPhase(`phase B, ${FOLLOWERS} followers`, b, EVENTS);
  const a2 = await bench.phase(EVENTS, 0);
  printPhase("phase A again, 0 followers", a2, EVENTS);
  if (b.failures.length > 0) {
    failed = true;
    console.log(`FAILED: ${b.failures.length} of ${FOLLOWERS} followers did not get every seq exactly once, in order:`);
    for (const f of b.failures.slice(0, 10)) console.log(`  ${f}`);
  } else console.log(`every follower got seq 1..${fmt(EVENTS)} exactly once, in order`);
  const cpuA =
    a1.cpu.threadMicros === null || a2.cpu.threadMicros === null
      ? null
      : (a1.cpu.threadMicros + a2.cpu.threadMicros) / 2;
  const cpuB = b.cpu.threadMicros;
  if (cpuA === null || cpuB === null) console.log("ratio: n/a (no per-thread CPU off Linux)");
  else {
    const ingest = cpuA / EVENTS;
    const perFollower = (cpuB - cpuA) / (EVENTS * FOLLOWERS);
    console.log(
      `added authority CPU per event per follower: ${perFollower.toFixed(2)} µs = (CPU_B ${fmt(cpuB / 1000)} ms − CPU_A ${fmt(cpuA / 1000)} ms, the mean of the two A runs) / (${fmt(EVENTS)} × ${FOLLOWERS})`,
    );
    console.log(`ingest CPU per event (phase A, the mean of both): ${ingest.toFixed(1)} µs`);
    console.log(
      `ratio (added per event per follower / ingest per event): ${(perFollower / ingest).toFixed(3)} (target ≤ 0.1)`,
    );
  }
  // A typed array sorts numerically in place: a million samples without a copy or a comparator.
  const sorted = b.latencyMs.sort();
  const ms = (q: number) =>
    sorted.length === 0 ? "n/a" : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
  const early = sorted.length > 0 && sorted[0]! < 0 ? sorted.findIndex((x) => x >= 0) : 0;
  if (early !== 0)
    console.log(
      `note: ${fmt(early < 0 ? sorted.length : early)} deliveries stamped before their commit's stamp (clock order)`,
    );
  console.log(
    `commit → delivered to follower ms   p50 ${ms(0.5)}   p99 ${ms(0.99)}   (${fmt(b.latencyMs.length)} samples)`,
  );
} finally {
  await bench.close();
  await store.close();
  rmSync(root, { recursive: true, force: true });
}
if (failed) process.exitCode = 1;
