import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { AuthorityObserver } from "../authority/authority-observer.js";
import { storeFailureKind } from "../authority/store-failure.js";
import type { AuthorityStore, RunState } from "../authority/store.js";
import { BoundedLabel } from "./bounded-label.js";
import { restarting, terminalLabels } from "./committed-labels.js";

/** Runs counted per state on a scrape at most; past it the gauge reads this (docs/deployment.md). */
export const MAX_COUNTED = 500;
/** A scrape reads the store at most once per this: many scrapers must not load the store. */
const STORE_READ_MS = 5_000;
/** Distinct refusal codes and stop reasons kept as labels; the rest count as "other". */
const MAX_CODES = 64;
const RUN_STATES: readonly RunState[] = ["queued", "claimed", "pending", "running", "ended"];
/** Commit and ACK latencies: 0.5 ms (an idle SQLite) to 10 s (a stalled database). */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Queue waits: a held poll claims within milliseconds; a full fleet leaves runs queued for hours. */
const QUEUE_WAIT_BUCKETS = [0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400];

/** What the metrics read from the authority process beside its observer's reports. */
export interface AuthorityGauges {
  store: AuthorityStore;
  /** Runs with a live runner connection here, and sockets not yet authenticated. */
  connections(): { live: number; unauthenticated: number };
  now?: () => number;
}

/** The store-derived figures, read together on a scrape and cached (STORE_READ_MS). */
interface StoreFigures {
  runs: Record<RunState, number>;
  queueDepth: number;
  queueOldestSeconds: number;
  workers: { active: number; revoked: number };
  commandsPending: number;
  commandOldestSeconds: number;
}

/**
 * The authority's Prometheus metrics (docs/deployment.md "Health and metrics"), in a registry
 * of its own: tests run many servers in one process, and the global default registry would mix
 * them. Counters and histograms are fed by the authority's observer as it works; gauges that
 * need the store are read on a scrape, cached, so a scraper cannot add load to ingest.
 */
export class AuthorityMetrics {
  readonly registry = new Registry();
  readonly observer: AuthorityObserver;
  /** A worker's poll claimed a run that had waited `waitedMs` since it was queued (the API tells this). */
  readonly runClaimed: (waitedMs: number) => void;
  private figures: { at: number; value: Promise<StoreFigures | null> } | null = null;

  constructor(gauges: AuthorityGauges, options: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    const now = gauges.now ?? Date.now;
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: "prp_" });
    const storeErrors = new Counter({
      name: "prp_store_errors_total",
      help: "Store calls that failed, by kind (read_only, full, unavailable)",
      labelNames: ["kind"],
      registers,
    });
    const read = async (): Promise<StoreFigures | null> => {
      const at = now();
      if (this.figures === null || at - this.figures.at >= STORE_READ_MS)
        this.figures = {
          at,
          value: readFigures(gauges.store, at).catch((err: unknown) => {
            storeErrors.inc({ kind: storeFailureKind(err) });
            return null; // the gauges keep their last values: a scrape never fails on the store
          }),
        };
      return this.figures.value;
    };
    new Gauge({
      name: "prp_runner_connections",
      help: "Runner connections to this instance by state: live (authenticated, one per run) or unauthenticated",
      labelNames: ["state"],
      registers,
      collect() {
        const c = gauges.connections();
        this.set({ state: "live" }, c.live);
        this.set({ state: "unauthenticated" }, c.unauthenticated);
      },
    });
    new Gauge({
      name: "prp_runs",
      help: `Runs in the store by state, each counted up to ${MAX_COUNTED}`,
      labelNames: ["state"],
      registers,
      async collect() {
        const f = await read();
        if (f) for (const state of RUN_STATES) this.set({ state }, f.runs[state]);
      },
    });
    new Gauge({
      name: "prp_run_queue_depth",
      help: `Runs queued for a worker, counted up to ${MAX_COUNTED}`,
      registers,
      async collect() {
        const f = await read();
        if (f) this.set(f.queueDepth);
      },
    });
    new Gauge({
      name: "prp_run_queue_oldest_age_seconds",
      help: "How long the run first in the queue has waited; 0 when the queue is empty",
      registers,
      async collect() {
        const f = await read();
        if (f) this.set(f.queueOldestSeconds);
      },
    });
    new Gauge({
      name: "prp_workers",
      help: "Worker credentials by state: active or revoked",
      labelNames: ["state"],
      registers,
      async collect() {
        const f = await read();
        if (f) for (const state of ["active", "revoked"] as const) this.set({ state }, f.workers[state]);
      },
    });
    new Gauge({
      name: "prp_command_queue_depth",
      help: `Commands without a result over the runs not ended, connected or not, counted up to ${MAX_COUNTED}`,
      registers,
      async collect() {
        const f = await read();
        if (f) this.set(f.commandsPending);
      },
    });
    new Gauge({
      name: "prp_command_queue_oldest_age_seconds",
      help: "How long the oldest of those commands has waited; 0 when none",
      registers,
      async collect() {
        const f = await read();
        if (f) this.set(f.commandOldestSeconds);
      },
    });
    const handshakes = new Counter({
      name: "prp_handshakes_total",
      help: "Runner handshakes by outcome (accepted, refused) and refusal code",
      labelNames: ["outcome", "code"],
      registers,
    });
    const events = new Counter({
      name: "prp_events_committed_total",
      help: "Runner events committed to the store by this instance",
      registers,
    });
    const commitSeconds = new Histogram({
      name: "prp_commit_duration_seconds",
      help: "Duration of one group-commit store transaction",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const batchSize = new Histogram({
      name: "prp_group_commit_events",
      help: "Events per group-commit store transaction",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
      registers,
    });
    const ackSeconds = new Histogram({
      name: "prp_commit_to_ack_seconds",
      help: "From an event's commit to the ACK that covers it leaving",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const ended = new Counter({
      name: "prp_runs_ended_total",
      help: "Runs whose run.terminal this instance committed, by terminal state and stopReason code",
      labelNames: ["state", "reason"],
      registers,
    });
    const harnessRestarts = new Counter({
      name: "prp_harness_restarts_total",
      help: "Harnesses restarted by their runner after a crash, counted from the committed harness.exited events that say so",
      registers,
    });
    const queueWait = new Histogram({
      name: "prp_run_queue_wait_seconds",
      help: "From a run being queued to a worker claiming it (counted by the API that answered the poll)",
      buckets: QUEUE_WAIT_BUCKETS,
      registers,
    });
    this.runClaimed = (waitedMs) => queueWait.observe(waitedMs / 1000);
    const refusalCodes = new BoundedLabel(MAX_CODES);
    const reasons = new BoundedLabel(MAX_CODES, ["none", "stalled"]);
    this.observer = {
      handshake: (outcome) =>
        outcome === "accepted"
          ? handshakes.inc({ outcome, code: "none" })
          : handshakes.inc({ outcome: "refused", code: refusalCodes.value(outcome.refused) }),
      batchCommitted: (size, seconds, committed) => {
        batchSize.observe(size);
        commitSeconds.observe(seconds);
        events.inc(committed.length);
        for (const event of committed) {
          if (event.eventType === "harness.exited" && restarting(event)) harnessRestarts.inc();
          if (event.eventType !== "run.terminal") continue;
          const { state, reason } = terminalLabels(event);
          ended.inc({ state, reason: reasons.value(reason) });
        }
      },
      ackSent: (seconds) => ackSeconds.observe(seconds),
      storeFailed: (kind) => storeErrors.inc({ kind }),
    };
  }
}

/** The store's figures, each a bounded read (MAX_COUNTED rows per query). */
async function readFigures(store: AuthorityStore, nowMs: number): Promise<StoreFigures> {
  const runs = {} as Record<RunState, number>;
  for (const state of RUN_STATES) runs[state] = (await store.listRuns({ state, limit: MAX_COUNTED })).runs.length;
  const queued = await store.queuedRuns(MAX_COUNTED);
  const oldest = Math.min(...queued.map((r) => r.queuedAtUnixMs));
  const workers = await store.workers();
  const revoked = workers.filter((w) => w.revokedAtUnixMs !== null).length;
  const pending = await store.pendingCommandTimes(MAX_COUNTED);
  return {
    commandsPending: pending.length,
    commandOldestSeconds: pending.length === 0 ? 0 : Math.max(0, (nowMs - pending[0]!) / 1000),
    runs,
    queueDepth: queued.length,
    queueOldestSeconds: queued.length === 0 ? 0 : Math.max(0, (nowMs - oldest) / 1000),
    workers: { active: workers.length - revoked, revoked },
  };
}
