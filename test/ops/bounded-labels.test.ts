import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { NewCommittedEvent } from "../../src/authority/store.js";
import { AuthorityMetrics } from "../../src/ops/authority-metrics.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { BoundedLabel, OTHER } from "../../src/ops/bounded-label.js";
import { TEST_SEED } from "../support/seed.js";
import { family, scrapeMismatches, type MetricFamily } from "./scrape.js";
import { createRequire } from "node:module";

const parseText = createRequire(import.meta.url)("parse-prometheus-text-format") as (text: string) => MetricFamily[];

const terminal = (payload: unknown): NewCommittedEvent => ({
  sourceSeq: 9,
  sourceEventId: "evt_9",
  eventType: "run.terminal",
  priority: 0,
  envelope: JSON.stringify({ eventType: "run.terminal", payload }),
});

/** Metrics with no store behind them: these tests feed the observer only. */
const metrics = () =>
  new AuthorityMetrics(
    { store: {} as AuthorityStore, connections: () => ({ live: 0, unauthenticated: 0 }) },
    { processMetrics: false },
  );

describe("bounded labels", () => {
  it("keeps known values, refuses text that is not a code, and stops taking new values at its bound", () => {
    const label = new BoundedLabel(3, ["stalled"]);
    assert.equal(label.value("stalled"), "stalled");
    assert.equal(label.value("Not A Code"), OTHER);
    assert.equal(label.value("x".repeat(49)), OTHER);
    assert.equal(label.value("a_code"), "a_code");
    assert.equal(label.value("b_code"), "b_code");
    assert.equal(label.value("c_code"), OTHER, "past the bound");
    assert.equal(label.value("a_code"), "a_code", "a value already taken stays itself");
  });

  it("a hostile runner's stop reasons cannot grow the series: 2000 distinct codes give at most 64 + other", async () => {
    console.log(`# stop reasons: seed ${TEST_SEED}`);
    const m = metrics();
    for (let i = 0; i < 2000; i++)
      m.observer.batchCommitted(1, 0.001, [
        terminal({
          runTerminalState: i % 3 === 0 ? "bogus" : "failed",
          stopReason: { code: `code_${TEST_SEED}_${i}` },
        }),
      ]);
    m.observer.batchCommitted(1, 0.001, [terminal({ runTerminalState: "failed", stopReason: { code: "stalled" } })]);
    for (let i = 0; i < 500; i++) m.observer.handshake({ refused: `refusal ${i} <script>` });
    const families = parseText(await m.registry.metrics());
    const ended = family(families, "prp_runs_ended_total").metrics;
    const states = new Set(ended.map((s) => s.labels!.state));
    assert.deepEqual([...states].sort(), ["failed", "other"]);
    assert.ok(ended.length <= 2 * 66, `${ended.length} series`);
    assert.equal(
      ended.reduce((n, s) => n + Number(s.value), 0),
      2001,
      "every terminal counted, whatever its label",
    );
    assert.ok(ended.some((s) => s.labels!.reason === "stalled" && s.labels!.state === "failed"));
    assert.ok(ended.some((s) => s.labels!.reason === "other"));
    const refused = family(families, "prp_handshakes_total").metrics;
    assert.deepEqual(
      refused.map((s) => [s.labels, s.value]),
      [[{ outcome: "refused", code: "other" }, "500"]],
    );
  });
});

describe("the scrape-vs-store oracle", () => {
  const text = [
    "# TYPE prp_events_committed_total counter",
    "prp_events_committed_total 7",
    "# TYPE prp_runs gauge",
    'prp_runs{state="ended"} 2',
    'prp_runs{state="running"} 0',
    "",
  ].join("\n");

  it("agrees when every count matches", () => {
    const families = parseText(text);
    assert.deepEqual(
      scrapeMismatches(families, [
        { name: "prp_events_committed_total", value: 7 },
        { name: "prp_runs", labels: { state: "ended" }, value: 2 },
      ]),
      [],
    );
  });

  it("must fail when one count is off by one", () => {
    const families = parseText(text);
    assert.deepEqual(
      scrapeMismatches(families, [
        { name: "prp_events_committed_total", value: 8 },
        { name: "prp_runs", labels: { state: "ended" }, value: 2 },
      ]),
      ["prp_events_committed_total{}: scraped 7, store says 8"],
    );
    assert.equal(scrapeMismatches(families, [{ name: "prp_runs", labels: { state: "running" }, value: 1 }]).length, 1);
  });
});
