import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { decode } from "../../src/contract/decode.js";
import { sequencedId } from "../../src/contract/ids.js";
import { outboxSink } from "../../src/runner/durable/outbox-sink.js";
import { RunnerState } from "../../src/runner/durable/runner-state.js";
import { buildEvent } from "../../src/runner/event-envelope.js";
import { EventSequencer } from "../../src/runner/event-sequencer.js";

const facts = {
  sourceSeq: 7,
  sourceEventId: "event_7",
  emittedAt: "2026-08-07T21:00:00.007Z",
  sourceInstanceId: "runner_1",
  runId: "run_1",
  normalizedSessionId: "session_1",
};
const identity = {
  runnerInstanceId: "runner_1",
  environmentLeaseId: "env_1",
  runId: "run_1",
  normalizedSessionId: "session_1",
  turnId: "turn_run",
  itemId: "item_run",
};

describe("one envelope builder for both runner modes", () => {
  it("builds a v1 runner envelope in wire order, with the priority of the type", () => {
    const event = buildEvent({
      ...facts,
      eventType: "item.delta",
      payload: { text: "hi" },
      turnId: "turn_1",
      itemId: "item_1",
    });
    assert.deepEqual(Object.keys(event), [
      "schema",
      "sourceEventId",
      "sourceSeq",
      "sourceInstanceId",
      "sourceKind",
      "runId",
      "normalizedSessionId",
      "turnId",
      "itemId",
      "eventType",
      "schemaVersion",
      "priority",
      "emittedAt",
      "payload",
    ]);
    assert.equal(event.sourceKind, "runner");
    assert.equal(event.priority, 2);
    assert.ok(decode(JSON.stringify(event)).ok);
  });

  it("leaves out an absent or empty turn and item, and takes a diagnostic's priority from its code", () => {
    const event = buildEvent({
      ...facts,
      eventType: "runner.diagnostic",
      payload: { code: "backpressure", message: "outbox full" },
      turnId: "",
      itemId: undefined,
    });
    assert.equal("turnId" in event || "itemId" in event, false);
    assert.equal(event.priority, 0);
  });

  it("local mode: event_<runId>_<seq, 3 digits> and a timestamp synthesised from the seq", () => {
    const sequencer = new EventSequencer({ runId: "run_1", normalizedSessionId: "session_1", runnerId: "runner_1" });
    sequencer.next("session.started", {});
    const next = sequencer.next(
      "item.started",
      { kind: "agent_message" },
      { turnId: "turn_1", itemId: "item_harness" },
    );
    assert.ok("event" in next);
    const { event } = next;
    assert.equal(event.sourceEventId, "event_run_1_002");
    assert.equal(event.emittedAt, "2026-08-07T21:00:00.002Z");
    assert.equal(event.sourceInstanceId, "runner_1");
    assert.deepEqual([event.turnId, event.itemId], ["turn_1", "item_harness"]);
  });

  it("an owner id too long for the 160-character bound becomes its digest: same id for the same event, different per owner and seq", () => {
    const long = `run_${"x".repeat(156)}`;
    assert.equal(long.length, 160);
    const id = sequencedId("event", long, 7, 16);
    assert.ok(id.length <= 160, `${id.length} characters`);
    assert.match(id, /^event_[0-9a-f]{40}_0000000000000007$/);
    assert.equal(sequencedId("event", long, 7, 16), id);
    assert.notEqual(sequencedId("event", `${long.slice(0, -1)}y`, 7, 16), id);
    assert.notEqual(sequencedId("event", long, 8, 16), id);
    assert.equal(sequencedId("event", "run_1", 7, 3), "event_run_1_007", "a short owner keeps the readable form");
    // The longest owner that keeps the readable form: 160 − "event_" − "_" − 16 digits.
    assert.equal(sequencedId("event", "r".repeat(137), 1, 16), `event_${"r".repeat(137)}_${"1".padStart(16, "0")}`);
    assert.match(sequencedId("event", "r".repeat(138), 1, 16), /^event_[0-9a-f]{40}_/);
  });

  describe("durable mode", () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), "prp-envelope-"));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it("a closed payload with the harness's item id (tool execution, diff): admitted as it is, the harness's item on the envelope", () => {
      const state = RunnerState.open(join(dir, "state-closed"), {
        ...identity,
        maxOutboxBytes: 1024 * 1024,
        p0ReserveBytes: 64 * 1024,
      });
      const sent: string[] = [];
      const sink = outboxSink(state, identity, {
        send: (envelope) => sent.push(envelope),
        unrecoverable: () => assert.fail("unrecoverable"),
        backpressure: () => assert.fail("backpressure"),
        waitForRoom: () => {},
      });
      const tool = {
        schema: "paperclip.tool.execution.v1",
        executionId: "tool_call_1",
        transport: "builtin",
        operation: "edit",
        status: "running",
        output: null,
        outputBytes: 0,
        outputTruncated: false,
        outputDigest: null,
        name: "Edit a.ts",
      };
      const diff = {
        schema: "paperclip.workspace.diff.v1",
        diffId: "tool_call_1_diff_1",
        complete: false,
        files: [],
        body: null,
      };
      const offers = [
        sink.offer({
          eventType: "tool.execution.started",
          payload: tool,
          turnId: "turn_harness",
          itemId: "tool_call_1",
        }),
        sink.offer({
          eventType: "workspace.change.updated",
          payload: diff,
          turnId: "turn_harness",
          itemId: "tool_call_1",
        }),
      ];
      state.close();
      assert.deepEqual(
        offers.map((o) => o.kind),
        ["admitted", "admitted"],
      );
      const events = sent.map((line) => {
        const decoded = decode(line);
        assert.ok(decoded.ok, decoded.ok ? "" : `${decoded.error.path}: ${decoded.error.message}`);
        return JSON.parse(line);
      });
      assert.deepEqual(
        events.map((e) => e.payload),
        [tool, diff],
        "the payload is the harness's, untouched",
      );
      assert.deepEqual(
        events.map((e) => [e.itemId, e.providerItemId]),
        [
          ["item_run", "tool_call_1"],
          ["item_run", "tool_call_1"],
        ],
      );
    });

    it("event_<runnerInstanceId>_<seq, 16 digits>, the wall clock, and the run's turn and item with the harness's item on the envelope", () => {
      const state = RunnerState.open(join(dir, "state"), {
        ...identity,
        maxOutboxBytes: 1024 * 1024,
        p0ReserveBytes: 64 * 1024,
      });
      const sent: string[] = [];
      const sink = outboxSink(state, identity, {
        send: (envelope) => sent.push(envelope),
        unrecoverable: () => assert.fail("unrecoverable"),
        backpressure: () => assert.fail("backpressure"),
        waitForRoom: () => {},
      });
      const start = Date.now();
      sink.offer({
        eventType: "item.started",
        payload: { kind: "agent_message" },
        turnId: "turn_harness",
        itemId: "item_harness",
      });
      sink.offer({ eventType: "session.started", payload: {} });
      state.close();
      const [item, session] = sent.map((line) => JSON.parse(line));
      assert.equal(item.sourceEventId, "event_runner_1_0000000000000001");
      assert.deepEqual(
        [item.turnId, item.itemId, item.providerItemId, item.payload],
        ["turn_run", "item_run", "item_harness", { kind: "agent_message" }],
      );
      assert.ok(Date.parse(item.emittedAt) >= start && Date.parse(item.emittedAt) <= Date.now());
      assert.equal(session.sourceEventId, "event_runner_1_0000000000000002");
      assert.equal("turnId" in session || "itemId" in session || "providerItemId" in session, false);
    });

    it("a runner instance id of 160 characters: every event it admits passes the codec, with ids of 160 or fewer", () => {
      const long = { ...identity, runnerInstanceId: `runner_${"y".repeat(153)}`, runId: `run_${"z".repeat(156)}` };
      const state = RunnerState.open(join(dir, "state-long"), {
        ...long,
        maxOutboxBytes: 1024 * 1024,
        p0ReserveBytes: 64 * 1024,
      });
      const sent: string[] = [];
      const sink = outboxSink(state, long, {
        send: (envelope) => sent.push(envelope),
        unrecoverable: (why) => assert.fail(`unrecoverable: ${String(why)}`),
        backpressure: () => assert.fail("backpressure"),
        waitForRoom: () => {},
      });
      for (let i = 0; i < 3; i++)
        assert.equal(sink.offer({ eventType: "session.started", payload: {} }).kind, "admitted");
      state.close();
      assert.equal(sent.length, 3);
      for (const line of sent) {
        const decoded = decode(line);
        assert.ok(decoded.ok, decoded.ok ? "" : decoded.error.message);
        assert.ok(JSON.parse(line).sourceEventId.length <= 160);
      }
      assert.equal(new Set(sent.map((line) => JSON.parse(line).sourceEventId)).size, 3);
    });
  });
});
