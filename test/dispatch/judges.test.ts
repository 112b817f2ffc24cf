import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { DispatchRow, LoggedEvent } from "../../src/authority/store.js";
import { judgeCaps, judgeExactlyOnce, parseWorkerRecord, type RunnerStart } from "./judges.js";

const event = (sourceSeq: number, eventType: string): LoggedEvent => ({
  sourceSeq,
  sourceEventId: `event_${sourceSeq}`,
  eventType,
  priority: 1,
  envelope: "{}",
  committedAtUnixMs: sourceSeq,
});

const goodLog = () => [
  event(1, "run.started"),
  event(2, "harness.starting"),
  event(3, "item.delta"),
  event(4, "run.terminal"),
];

const row = (
  runId: string,
  claimed: number,
  ended: number | null,
  labels: Record<string, string> = {},
): DispatchRow => ({
  runId,
  state: ended === null ? "claimed" : "ended",
  priority: 0,
  labels,
  queuedAtUnixMs: 0,
  attempts: 1,
  workerId: "wkr_0000000000000001",
  claimRequestId: null,
  claimedAtUnixMs: claimed,
  endedAtUnixMs: ended,
  endReason: null,
  endDetail: null,
});

const start = (runId: string, exitCode: number | null | undefined = 0): RunnerStart => ({
  worker: "w1",
  runId,
  attempt: 1,
  pid: 100,
  exitCode,
});

describe("the exactly-once judge", () => {
  const runs = ["run_a", "run_b"];
  const judge = (
    logs: Map<string, LoggedEvent[]>,
    starts: RunnerStart[],
    rows = [row("run_a", 1, 2), row("run_b", 1, 2)],
  ) => judgeExactlyOnce(runs, logs, starts, new Map(rows.map((r) => [r.runId, r])));
  const logs = () => new Map(runs.map((r) => [r, goodLog()]));

  it("passes runs each executed once", () => {
    assert.deepEqual(judge(logs(), [start("run_a"), start("run_b")]), []);
  });

  it("fails a run whose terminal is missing, repeated, or not last", () => {
    const missing = logs();
    missing.set("run_a", goodLog().slice(0, 3));
    assert.match(judge(missing, [start("run_a"), start("run_b")]).join(), /run_a: 0 run.terminal/);
    const twice = logs();
    twice.set("run_b", [...goodLog(), event(5, "run.terminal")]);
    assert.match(judge(twice, [start("run_a"), start("run_b")]).join(), /run_b: 2 run.terminal/);
  });

  it("fails a log with a gap or a repeated seq, or a harness started twice", () => {
    const gap = logs();
    gap.set("run_a", [event(1, "run.started"), event(3, "harness.starting"), event(4, "run.terminal")]);
    assert.match(judge(gap, [start("run_a"), start("run_b")]).join(), /run_a: event 2 of its log has seq 3/);
    const twice = logs();
    twice.set("run_b", [event(1, "harness.starting"), event(2, "harness.starting"), event(3, "run.terminal")]);
    assert.match(judge(twice, [start("run_a"), start("run_b")]).join(), /run_b: its harness started 2 times/);
  });

  it("fails a run two runners finished, one started more often than claimed, or one nobody started", () => {
    assert.match(
      judge(logs(), [start("run_a"), { ...start("run_a"), attempt: 2 }, start("run_b")]).join(),
      /run_a: 2 runners started for 1 claim/,
    );
    const twoClaims = [{ ...row("run_a", 1, 2), attempts: 2 }, row("run_b", 1, 2)];
    assert.match(
      judge(logs(), [start("run_a"), { ...start("run_a"), attempt: 2 }, start("run_b")], twoClaims).join(),
      /run_a: 2 runners exited 0/,
    );
    assert.match(judge(logs(), [start("run_a")]).join(), /run_b: no worker records starting it/);
  });
});

describe("the caps judge", () => {
  it("passes slots held one after another, an end and a claim at one instant included", () => {
    assert.deepEqual(judgeCaps([row("a", 1, 5), row("b", 5, 9), row("c", 9, null)], { "*": 1 }), []);
  });

  it("fails two runs holding one slot at once", () => {
    assert.match(judgeCaps([row("a", 1, 5), row("b", 4, 9)], { "*": 1 }).join(), /cap \*: 2 runs held a slot/);
  });

  it("judges a label's cap on the runs with that label only", () => {
    const rows = [row("a", 1, 9, { team: "red" }), row("b", 2, 9, { team: "blue" }), row("c", 3, 9, { team: "red" })];
    assert.deepEqual(judgeCaps(rows, { "team=blue": 1 }), []);
    assert.match(judgeCaps(rows, { "team=red": 1 }).join(), /cap team=red: 2 runs/);
  });

  it("counts a run still claimed as holding its slot", () => {
    assert.match(judgeCaps([row("a", 1, null), row("b", 100, 200)], { "*": 1 }).join(), /2 runs held a slot/);
  });
});

describe("a worker's record", () => {
  it("joins each start with its pid and its exit", () => {
    const text = [
      JSON.stringify({ runId: "run_a", attempt: 1, startedAt: "t" }),
      JSON.stringify({ runId: "run_a", attempt: 1, pid: 42, startedAt: "t" }),
      JSON.stringify({ runId: "run_b", attempt: 2, startedAt: "t" }),
      JSON.stringify({ runId: "run_a", exitCode: 0, signal: null, exitedAt: "t" }),
      "",
    ].join("\n");
    assert.deepEqual(parseWorkerRecord("w", text), [
      { worker: "w", runId: "run_a", attempt: 1, pid: 42, exitCode: 0 },
      { worker: "w", runId: "run_b", attempt: 2, pid: null, exitCode: undefined },
    ]);
  });
});
