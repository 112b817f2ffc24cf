import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import type { AuthorityStore, NewCommittedEvent, RunQuery } from "../../src/authority/store.js";
import { AuthorityMetrics } from "../../src/ops/authority-metrics.js";
import { family, scrapeMismatches, type MetricFamily } from "./scrape.js";

const parseText = createRequire(import.meta.url)("parse-prometheus-text-format") as (text: string) => MetricFamily[];

/** A store that answers the gauges' reads from fixed rows, and counts the reads. */
function fakeStore(reads: { n: number }): AuthorityStore {
  const runs: Record<string, number> = { queued: 2, claimed: 1, pending: 0, running: 3, ended: 7 };
  return {
    listRuns: async (q: RunQuery) => {
      reads.n++;
      return { runs: Array.from({ length: runs[q.state!]! }, () => ({})), next: null };
    },
    queuedRuns: async () => [{ queuedAtUnixMs: 40_000 }, { queuedAtUnixMs: 70_000 }],
    workers: async () => [{ revokedAtUnixMs: null }, { revokedAtUnixMs: 5 }, { revokedAtUnixMs: null }],
    pendingCommandTimes: async (limit: number) => [90_000, 95_000].slice(0, limit),
  } as unknown as AuthorityStore;
}

describe("the store-derived gauges", () => {
  it("count runs, the run queue, workers and the pending commands, read once per 5 s", async () => {
    const reads = { n: 0 };
    let nowMs = 100_000;
    const m = new AuthorityMetrics(
      {
        store: fakeStore(reads),
        connections: () => ({ live: 2, unauthenticated: 1 }),
        now: () => nowMs,
      },
      { processMetrics: false },
    );
    const families = parseText(await m.registry.metrics());
    assert.deepEqual(
      scrapeMismatches(families, [
        { name: "prp_runs", labels: { state: "queued" }, value: 2 },
        { name: "prp_runs", labels: { state: "running" }, value: 3 },
        { name: "prp_runs", labels: { state: "ended" }, value: 7 },
        { name: "prp_run_queue_depth", value: 2 },
        { name: "prp_run_queue_oldest_age_seconds", value: 60 },
        { name: "prp_workers", labels: { state: "active" }, value: 2 },
        { name: "prp_workers", labels: { state: "revoked" }, value: 1 },
        { name: "prp_command_queue_depth", value: 2 },
        { name: "prp_command_queue_oldest_age_seconds", value: 10 },
        { name: "prp_runner_connections", labels: { state: "live" }, value: 2 },
        { name: "prp_runner_connections", labels: { state: "unauthenticated" }, value: 1 },
      ]),
      [],
    );
    assert.equal(reads.n, 5, "one listRuns per state");
    nowMs += 4_999;
    await m.registry.metrics();
    assert.equal(reads.n, 5, "a scrape within 5 s reads nothing");
    nowMs += 1;
    await m.registry.metrics();
    assert.equal(reads.n, 10, "5 s later the store is read again");
  });

  it("a failing store leaves the gauges at their last values and counts the failure by kind", async () => {
    const reads = { n: 0 };
    let failing = false;
    const good = fakeStore(reads);
    const store = new Proxy(good, {
      get: (target, key) =>
        failing && key === "listRuns"
          ? async () => {
              throw Object.assign(new Error("database is locked"), { code: "SQLITE_READONLY" });
            }
          : target[key as keyof AuthorityStore],
    });
    let nowMs = 0;
    const m = new AuthorityMetrics(
      { store, connections: () => ({ live: 0, unauthenticated: 0 }), now: () => nowMs },
      { processMetrics: false },
    );
    await m.registry.metrics();
    failing = true;
    nowMs += 5_000;
    await m.registry.metrics();
    const families = parseText(await m.registry.metrics());
    assert.deepEqual(
      scrapeMismatches(families, [
        { name: "prp_runs", labels: { state: "ended" }, value: 7 },
        { name: "prp_store_errors_total", labels: { kind: "read_only" }, value: 1 },
      ]),
      [],
    );
  });

  it("count harness restarts from committed harness.exited events, and time each queue wait", async () => {
    const m = new AuthorityMetrics(
      {
        store: fakeStore({ n: 0 }),
        connections: () => ({ live: 0, unauthenticated: 0 }),
      },
      { processMetrics: false },
    );
    const committed = (eventType: string, envelope: string) => ({ eventType, envelope }) as NewCommittedEvent;
    const exited = (payload: unknown) =>
      committed("harness.exited", JSON.stringify({ eventType: "harness.exited", payload }));
    m.observer.batchCommitted(5, 0.001, [
      exited({ signal: "SIGKILL", restarting: true }),
      exited({ exitCode: 0 }), // a harness that ended: no restart
      exited({ restarting: "true" }), // the runner wrote it, so only the boolean counts
      committed("harness.exited", "not json"),
      committed("turn.completed", JSON.stringify({ payload: { restarting: true } })),
    ]);
    m.runClaimed(1_500);
    m.runClaimed(0);
    const families = parseText(await m.registry.metrics());
    assert.deepEqual(
      scrapeMismatches(families, [
        { name: "prp_harness_restarts_total", value: 1 },
        { name: "prp_run_queue_wait_seconds", value: 2 },
      ]),
      [],
    );
    assert.equal(family(families, "prp_run_queue_wait_seconds").metrics[0]!.sum, "1.5");
  });
});
