import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RecordCheck, type RecordProblem } from "../../src/bundle/record-check.js";
import { sequencedId } from "../../src/contract/ids.js";
import type { PrpEvent } from "../../src/contract/kinds.js";

const RUN = "run_check";
const idOf = (seq: number) => sequencedId("event", RUN, seq, 3);
const event = (seq: number, over: Partial<PrpEvent> = {}): PrpEvent =>
  ({
    sourceSeq: seq,
    sourceEventId: idOf(seq),
    sourceKind: "runner",
    sourceInstanceId: "runner_check",
    runId: RUN,
    normalizedSessionId: "session_check",
    eventType: seq === 4 ? "run.terminal" : "item.delta",
    payload: {},
    ...over,
  }) as PrpEvent;

/** What `prp run` uses: the run it started, from 1, ids by the runner's naming (nothing kept per event). */
const check = () =>
  new RecordCheck({ pathOf: (i) => `/events/${i}`, firstSeq: 1, runId: RUN, sessionId: "session_check", idOf });
const first = (events: PrpEvent[]): RecordProblem | null => {
  const c = check();
  for (const e of events) {
    const problem = c.accept(e);
    if (problem) return problem;
  }
  return c.finish();
};
const at = (p: RecordProblem | null) => (p ? [p.code, p.path] : null);

describe("RecordCheck as prp run applies it to its runner's stream", () => {
  it("accepts a whole record and counts it", () => {
    const c = check();
    for (const seq of [1, 2, 3, 4]) assert.equal(c.accept(event(seq)), null);
    assert.equal(c.finish(), null);
    assert.deepEqual([c.count, c.terminal], [4, 3]);
  });

  it("refuses, at the event, each break of the rules", () => {
    assert.deepEqual(
      at(first([event(1), event(3, { sourceEventId: idOf(2) })])),
      ["duplicate_event_id", "/events/1/sourceEventId"],
      "an id the runner gives another number",
    );
    assert.deepEqual(
      at(first([event(1), event(2, { sourceEventId: "event_forged" })])),
      ["duplicate_event_id", "/events/1/sourceEventId"],
      "an id the runner never gives",
    );
    assert.deepEqual(at(first([event(2)])), ["sequence_gap", "/events/0/sourceSeq"], "a live record starts at 1");
    assert.deepEqual(at(first([event(1), event(2), event(2)])), ["sequence_repeat", "/events/2/sourceSeq"]);
    assert.deepEqual(
      at(first([event(1, { runId: "run_other" })])),
      ["run_mismatch", "/events/0/runId"],
      "the run prp run started, not the first event's",
    );
    assert.deepEqual(at(first([event(1), event(2, { normalizedSessionId: "session_other" })])), [
      "session_mismatch",
      "/events/1/normalizedSessionId",
    ]);
    assert.deepEqual(at(first([event(1), event(2, { sourceInstanceId: "runner_other" })])), [
      "source_mismatch",
      "/events/1/sourceInstanceId",
    ]);
    assert.deepEqual(at(first([event(1), event(2), event(3)])), ["missing_terminal", "/events/3"]);
    assert.deepEqual(at(first([event(1), event(2), event(3), event(4), event(5)])), [
      "event_after_terminal",
      "/events/4",
    ]);
    assert.deepEqual(at(first([event(1), event(2), event(3), event(4), event(5, { eventType: "run.terminal" })])), [
      "second_terminal",
      "/events/4",
    ]);
  });
});
