import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { commandReceipt, RECEIPT_TEXT } from "../../src/api/run-view.js";
import { copyFacts, emptyFacts, foldFacts, KEEP_TURN_IDS, KEEP_TURNS } from "../../src/api/run-facts.js";
import type { CommandRow } from "../../src/authority/store.js";
import type { PrpEvent } from "../../src/contract/kinds.js";

let seq = 0;
/** An envelope with just what the fold reads: its type, identity and payload. */
const ev = (eventType: string, ids: { turnId?: string; itemId?: string }, payload: object = {}): PrpEvent =>
  ({ eventType, sourceSeq: ++seq, emittedAt: "2026-01-01T00:00:00Z", ...ids, payload }) as unknown as PrpEvent;

describe("a run's turns, folded from its events", () => {
  it("each turn in event order, with its state, its items and tool executions once each, and its requests", () => {
    const facts = emptyFacts();
    foldFacts(facts, [
      ev("session.started", {}),
      ev("turn.submitted", { turnId: "turn_1" }),
      ev("turn.started", { turnId: "turn_1" }),
      ev("item.started", { turnId: "turn_1", itemId: "item_a" }, { kind: "assistant_message" }),
      ev("item.delta", { turnId: "turn_1", itemId: "item_a" }, { text: "hi" }),
      ev("tool.execution.started", { turnId: "turn_1", itemId: "item_t" }, { executionId: "exec_1" }),
      ev("runtime_request.created", { turnId: "turn_1" }, { requestId: "request_1", type: "permission" }),
      // No turnId on the envelope: the latest turn's.
      ev("item.completed", { itemId: "item_b" }, { kind: "reasoning" }),
      ev("tool.execution.completed", { turnId: "turn_1" }, { executionId: "exec_1" }),
      ev("turn.completed", { turnId: "turn_1" }),
    ]);
    foldFacts(facts, [
      ev("turn.started", { turnId: "turn_2" }),
      ev("item.started", { turnId: "turn_2", itemId: "item_c" }),
      ev("turn.interrupted", { turnId: "turn_2" }),
    ]);
    assert.deepEqual(facts.turns, [
      {
        turnId: "turn_1",
        state: "completed",
        items: ["item_a", "exec_1", "item_b"],
        requests: ["request_1"],
      },
      { turnId: "turn_2", state: "interrupted", items: ["item_c"], requests: [] },
    ]);
  });

  it("events before any turn name none; a copy folds on without changing the original", () => {
    const facts = emptyFacts();
    foldFacts(facts, [ev("item.started", { itemId: "item_early" }), ev("turn.started", { turnId: "turn_1" })]);
    assert.deepEqual(facts.turns, [{ turnId: "turn_1", state: "running", items: [], requests: [] }]);
    const next = copyFacts(facts);
    foldFacts(next, [ev("item.started", { turnId: "turn_1", itemId: "item_a" })]);
    assert.deepEqual(facts.turns[0]!.items, [], "the cached value is untouched");
    assert.deepEqual(next.turns[0]!.items, ["item_a"]);
  });

  it("is bounded: the last turns, and the last ids of each (must fail without the bounds)", () => {
    const facts = emptyFacts();
    const many = Array.from({ length: KEEP_TURNS + 5 }, (_, i) => ev("turn.started", { turnId: `turn_${i}` }));
    const items = Array.from({ length: KEEP_TURN_IDS + 5 }, (_, i) =>
      ev("item.started", { turnId: `turn_${KEEP_TURNS + 4}`, itemId: `item_${i}` }),
    );
    foldFacts(facts, [...many, ...items]);
    assert.equal(facts.turns.length, KEEP_TURNS);
    assert.equal(facts.turns[0]!.turnId, "turn_5");
    const last = facts.turns.at(-1)!;
    assert.equal(last.items.length, KEEP_TURN_IDS);
    assert.equal(last.items[0], "item_5");
  });
});

describe("a command's receipt", () => {
  const row = (type: string, payload: object): CommandRow =>
    ({
      commandId: "command_1",
      controllerSeq: 1,
      type,
      payload: JSON.stringify(payload),
      status: null,
      result: null,
      deliveryCount: 0,
    }) as unknown as CommandRow;

  it("repeats a turn.start's and a turn.steer's text, bounded; no other command's", () => {
    assert.equal(commandReceipt(row("turn.start", { text: "Fix <b>it</b>", turnId: "t" })).text, "Fix <b>it</b>");
    assert.equal(commandReceipt(row("turn.steer", { text: "and the docs" })).text, "and the docs");
    assert.equal(commandReceipt(row("turn.steer", { text: "x".repeat(RECEIPT_TEXT + 10) })).text?.length, RECEIPT_TEXT);
    assert.equal("text" in commandReceipt(row("run.cancel", { text: "not a person's words" })), false);
    assert.equal("text" in commandReceipt(row("turn.start", {})), false);
  });
});
