import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { LocalRunnerClient } from "../../src/runner/local-client.js";
import type { CommandReceipt } from "../../src/runner/stream.js";
import { AT } from "../contract/samples.js";
import { goalEventProblems, goalTrail, writeGoalScript } from "../support/goal-script.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";

const dir = mkdtempSync(join(tmpdir(), "prp-goals-local-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** prp-runnerd --local on a script, at a protocol version; every event and receipt is kept. */
function start(scriptPath: string, protocolMax: number) {
  const events: PrpEvent[] = [];
  const receipts: CommandReceipt[] = [];
  const client = new LocalRunnerClient({
    runId: "run_goals",
    sessionId: "session_goals",
    runnerId: "runner_goals",
    scriptPath,
    delayMs: 0,
    extraArgs: [...PATIENT_HARNESS, "--protocol-max", String(protocolMax)],
    onEvent: (e) => events.push(e),
    onReceipt: (r) => receipts.push(r),
    onBadLine: (l) => assert.fail(`a line that is not a stream record: ${l.slice(0, 200)}`),
  });
  const line = (seq: number, type: string, payload: Record<string, unknown> = {}, version = 1) =>
    client.sendRaw(
      JSON.stringify({
        schema: `paperclip.prp.command.v${version}`,
        commandId: `c${seq}_${type}_${Object.keys(payload).join("_")}`,
        controllerSeq: seq,
        type,
        issuedAt: AT,
        payload,
      }),
    );
  const receiptOf = async (type: string, n = 1): Promise<CommandReceipt> => {
    await until(
      () => receipts.filter((r) => r.type === type).length >= n,
      () => `receipt ${n} of ${type}; got ${JSON.stringify(receipts)}`,
    );
    return receipts.filter((r) => r.type === type)[n - 1]!;
  };
  const waitFor = (type: string, n = 1) =>
    until(
      () => events.filter((e) => e.eventType === type).length >= n,
      () =>
        `${n} × ${type}; the runner wrote ${events.map((e) => e.eventType).join(", ")}; stderr: ${client.stderrTail().join(" | ")}`,
      20_000,
    );
  const opening = () => {
    line(1, "run.prepare");
    line(2, "session.open");
    line(3, "turn.start", { turnId: "turn_goals" });
  };
  return { client, events, receipts, line, receiptOf, waitFor, opening };
}

describe("session goals through prp-runnerd --local", () => {
  it("v3: out-of-range goal commands are refused by the codec with typed receipts; set, get, pause and clear go through the harness, each answered by its event, once, in order", async () => {
    const r = start(writeGoalScript(dir, 5), 3); // the runner's own get, then set, get, pause and clear
    r.opening();
    await r.waitFor("session.goal.snapshot");
    await r.waitFor("turn.started");
    // Refused at the contract: no sequence number is used, so the next command takes seq 4 again.
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ objective: "x".repeat(4001) }, "/payload/objective"],
      [{ objective: "" }, "/payload/objective"],
      [{ tokenBudget: 0 }, "/payload/tokenBudget"],
      [{ status: "completed" }, "/payload/status"],
      [{ requestId: "r".repeat(161) }, "/payload/requestId"],
    ];
    for (const [i, [payload, path]] of bad.entries()) {
      r.line(4, "session.goal.set", payload, 3);
      const receipt = await r.receiptOf("session.goal.set", i + 1);
      assert.equal(receipt.status, "rejected", JSON.stringify(payload).slice(0, 80));
      assert.equal(receipt.code, "schema_validation");
      assert.match(String(receipt.reason), new RegExp(path.replaceAll("/", "\\/")));
    }
    r.line(4, "session.goal.set", { requestId: "req_1", objective: "Make the build green", tokenBudget: 5000 }, 3);
    await r.waitFor("session.goal.updated");
    r.line(5, "session.goal.get", {}, 3);
    await r.waitFor("session.goal.snapshot", 2);
    r.line(6, "session.goal.set", { status: "paused" }, 2);
    await r.waitFor("session.goal.updated", 2);
    r.line(7, "session.goal.clear", {}, 3);
    await r.waitFor("run.terminal");
    const goal = { objective: "Make the build green", status: "active", workingNow: false, tokenBudget: 5000 };
    assert.deepEqual(goalTrail(r.events), [
      `session.capabilities.updated ${JSON.stringify({ sessionGoals: { availability: "available", actions: ["get", "set", "pause", "resume", "clear"] } })}`,
      'session.goal.snapshot {"goal":null}',
      `session.goal.updated ${JSON.stringify({ goal })}`,
      `session.goal.snapshot ${JSON.stringify({ goal })}`,
      `session.goal.updated ${JSON.stringify({ goal: { ...goal, status: "paused" } })}`,
      "session.goal.cleared {}",
    ]);
    assert.deepEqual(goalEventProblems(r.events, 3), []);
    assert.ok(
      r.events.filter((e) => e.eventType === "turn.started").every((e) => e.schemaVersion === 1),
      "types every version has stay v1",
    );
    assert.equal((r.events.at(-1)!.payload as { runTerminalState: string }).runTerminalState, "succeeded");
  });

  it("v1: no goal event in the stream, and a goal command is refused with a typed receipt before it reaches the harness", async () => {
    const r = start(writeGoalScript(dir, 1), 1);
    r.opening();
    await r.waitFor("turn.started");
    r.line(4, "session.goal.set", { objective: "Make the build green" }, 2);
    const tooNew = await r.receiptOf("session.goal.set");
    assert.deepEqual([tooNew.status, tooNew.code], ["rejected", "envelope_version_too_new"]);
    r.line(5, "session.goal.get", {}, 1);
    const noSuchType = await r.receiptOf("session.goal.get");
    assert.deepEqual(
      [noSuchType.status, noSuchType.code],
      ["rejected", "schema_validation"],
      "command.v1 has no goal types at all",
    );
    // The harness waits on its one goal command: had either reached it, it would have gone on to item.started.
    r.line(5, "run.cancel");
    await r.waitFor("run.terminal");
    assert.equal(
      r.events.some((e) => e.eventType === "item.started"),
      false,
      "no goal command reached the harness",
    );
    assert.equal((r.events.at(-1)!.payload as { runTerminalState: string }).runTerminalState, "cancelled");
    assert.deepEqual(goalEventProblems(r.events, 1), []);
    assert.ok(
      r.events.every((e) => e.schemaVersion === 1 && e.schema === "paperclip.prp.event.v1"),
      "only v1 envelopes",
    );
  });
});
