import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CommandIntake } from "../../src/runner/command-intake.js";
import { command, json } from "../contract/samples.js";

const intake = (limit?: number) => new CommandIntake(new Set(["run.prepare", "turn.start"]), limit);
const cmd = (seq: number, overrides: Record<string, unknown> = {}) =>
  json(command(1, { commandId: `c${seq}`, controllerSeq: seq, ...overrides }));

describe("command rules (runtime.md §4.2)", () => {
  it("accepts contiguous sequence numbers from 1", () => {
    const i = intake();
    assert.equal(i.admit(cmd(1)).receipt.status, "accepted");
    assert.equal(i.admit(cmd(2)).receipt.status, "accepted");
    assert.equal(i.nextSeq, 3);
  });

  it("answers a repeated command with duplicate and no effect, and a changed one with rejected", () => {
    const i = intake();
    i.admit(cmd(1));
    const again = i.admit(cmd(1));
    assert.equal(again.receipt.status, "duplicate");
    assert.equal(again.command, undefined);
    const changed = i.admit(cmd(1, { payload: { text: "other" } }));
    assert.equal(changed.receipt.status, "rejected");
    assert.equal(changed.receipt.code, "command_id_reused");
    assert.equal(i.nextSeq, 2);
  });

  it("refuses what canonical JSON cannot fingerprint (a lone surrogate, 12,000 values) with a typed receipt, never a throw, keeping the sequence", () => {
    const i = intake();
    for (const [line, path] of [
      [cmd(1, { commandId: "c\ud800" }), "/commandId"],
      [cmd(1, { payload: { text: "split \ud83d" } }), "/payload/text"],
      [cmd(1, { payload: { values: new Array(12_000).fill(0) } }), "/payload/values/"],
    ] as const) {
      const { receipt, command } = i.admit(line);
      assert.equal(command, undefined);
      assert.equal(receipt.status, "rejected");
      assert.equal(receipt.code, "schema_validation");
      assert.equal(receipt.controllerSeq, 1, "the receipt names the command it refuses");
      assert.ok(receipt.reason?.startsWith(path), receipt.reason);
    }
    assert.equal(i.nextSeq, 1, "nothing consumed a sequence number");
    assert.equal(i.admit(cmd(1)).receipt.status, "accepted");
  });

  it("refuses a line with a repeated member name as invalid_json, echoing neither reading of it", () => {
    const i = intake();
    const { receipt } = i.admit(cmd(1).replace('"commandId":"c1"', '"commandId":"c1","commandId":"c2"'));
    assert.deepEqual(
      { ...receipt, reason: undefined },
      { commandId: null, controllerSeq: null, type: null, status: "rejected", code: "invalid_json", reason: undefined },
    );
    assert.match(receipt.reason!, /duplicate member name "commandId"/);
  });

  it("treats key order as the same command (canonical fingerprints)", () => {
    const i = intake();
    const c = command(1, { commandId: "c1" });
    i.admit(JSON.stringify(c));
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(c).reverse()));
    assert.equal(i.admit(reordered).receipt.status, "duplicate");
  });

  it("rejects a gap or a repeat of the sequence without consuming it", () => {
    const i = intake();
    assert.equal(i.admit(cmd(2)).receipt.code, "controller_seq_out_of_order");
    assert.equal(i.nextSeq, 1);
    i.admit(cmd(1));
    assert.equal(
      i.admit(json(command(1, { commandId: "other", controllerSeq: 1 }))).receipt.code,
      "controller_seq_out_of_order",
    );
  });

  it("rejects an unsupported type after consuming its sequence number", () => {
    const i = intake();
    const r = i.admit(cmd(1, { type: "runner.drain" }));
    assert.equal(r.receipt.status, "rejected");
    assert.equal(r.receipt.code, "unsupported_command");
    assert.equal(i.nextSeq, 2);
    assert.equal(i.admit(cmd(2)).receipt.status, "accepted");
  });

  it("rejects malformed and contract-breaking lines with the codec's code, naming what it can", () => {
    const i = intake();
    assert.deepEqual(i.admit("{nope").receipt, {
      commandId: null,
      controllerSeq: null,
      type: null,
      status: "rejected",
      code: "invalid_json",
      reason:
        "/: input is not JSON: " +
        (() => {
          try {
            JSON.parse("{nope");
          } catch (e) {
            return (e as Error).message;
          }
          return "";
        })(),
    });
    const wrong = i.admit(json(command(1, { commandId: "c1", schema: "paperclip.prp.command.v9" })));
    assert.equal(wrong.receipt.code, "unsupported_required_schema");
    assert.equal(wrong.receipt.commandId, "c1");
    assert.equal(i.nextSeq, 1);
  });

  it("forgets fingerprints beyond the history limit, whose sequence numbers are then stale", () => {
    const i = intake(2);
    for (let s = 1; s <= 3; s++) i.admit(cmd(s));
    assert.equal(i.admit(cmd(1)).receipt.code, "controller_seq_out_of_order");
    assert.equal(i.admit(cmd(3)).receipt.status, "duplicate");
  });
});
