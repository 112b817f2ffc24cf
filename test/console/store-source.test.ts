import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { commandReceipt } from "../../src/api/run-view.js";
import { CommandQueue } from "../../src/authority/commands.js";
import { authority, connect, unwrap, withRun } from "../authority/support.js";

describe("the API's command receipts (what the console shows): a command followed to the runner and back", () => {
  const dir = mkdtempSync(join(tmpdir(), "prp-console-source-"));
  const a = authority(join(dir, "store"));
  after(async () => {
    await a.store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("says queued, then delivered, then the runner's result with its reason when it was not applied", async () => {
    await withRun(a);
    const conn = (await connect(a)).connectionId;
    const queue = new CommandQueue({ store: a.store });
    const queued = async (type: string) => {
      const receipt = await queue.queueCommand("run_1", type, { reason: "operator" });
      assert.ok(receipt.ok, JSON.stringify(receipt));
      return receipt.value;
    };
    const interrupt = await queued("turn.interrupt");
    const cancel = await queued("run.cancel");
    const state = async () =>
      (await a.store.commands("run_1"))
        .map((c) => commandReceipt(c))
        .map(({ status, delivered, reason }) => ({ status, delivered, reason }));
    assert.deepEqual(await state(), [
      { status: null, delivered: false, reason: undefined },
      { status: null, delivered: false, reason: undefined },
    ]);
    unwrap(await a.store.deliverNextCommand("run_1", conn, false, 1));
    assert.deepEqual((await state())[0], { status: null, delivered: true, reason: undefined });
    const result = (status: string, body: Record<string, unknown>) =>
      JSON.stringify({ commandId: interrupt.commandId, status, result: body });
    unwrap(
      await a.store.recordCommandResult(
        "run_1",
        conn,
        {
          commandId: interrupt.commandId,
          status: "rejected",
          result: result("rejected", { code: "no_active_turn", message: "there is no active turn to interrupt" }),
        },
        2,
      ),
    );
    unwrap(await a.store.deliverNextCommand("run_1", conn, false, 3));
    unwrap(
      await a.store.recordCommandResult(
        "run_1",
        conn,
        {
          commandId: cancel.commandId,
          status: "completed",
          result: JSON.stringify({ commandId: cancel.commandId, status: "completed", result: {} }),
        },
        4,
      ),
    );
    assert.deepEqual(await state(), [
      { status: "rejected", delivered: true, reason: "no_active_turn: there is no active turn to interrupt" },
      { status: "completed", delivered: true, reason: undefined },
    ]);
  });
});
