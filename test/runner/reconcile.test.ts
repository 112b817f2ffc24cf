import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { reconcileTerminal, type RunFacts } from "../../src/runner/reconcile.js";
import { result, terminal } from "../contract/samples.js";

const ok = { exitCode: 0, signal: null, success: true };
const exit7 = { exitCode: 7, signal: null, success: false };
const facts = (f: Partial<RunFacts>): RunFacts => ({ intent: null, exit: ok, result: null, proposal: null, ...f });
const done = result() as never;
const yielded = result({
  reportedWorkDisposition: "yielded",
  continuation: { kind: "retry", summary: "s", idempotencyKey: "k" },
}) as never;
const states = (f: Partial<RunFacts>) => {
  const t = reconcileTerminal(facts(f));
  return [t.turnTerminalState, t.runTerminalState, t.reportedWorkDisposition, t.reconciliation?.reason];
};

describe("terminal reconciliation (runtime.md §4.4)", () => {
  it("an agent that could not start: failed, harness_process_failed, its typed cause as the stop reason", () => {
    const t = reconcileTerminal(
      facts({
        intent: "agent_start_failed",
        exit: null,
        stopCause: { receiptId: "stop_r", kind: "agent_start", code: "agent_not_installed", message: "install it" },
      }),
    );
    assert.deepEqual(
      [t.turnTerminalState, t.runTerminalState, t.reconciliation?.reason, t.reconciliation?.processExit],
      ["failed", "failed", "harness_process_failed", null],
    );
    assert.deepEqual(
      [t.stopReason?.kind, t.stopReason?.code, t.stopReason?.message, t.stopReason?.retryable],
      ["agent_start", "agent_not_installed", "install it", false],
    );
    const runner = reconcileTerminal(
      facts({ intent: "internal_error", stopCause: { receiptId: "s", code: "c", message: "m" } }),
    );
    assert.equal(runner.stopReason?.kind, "runner", "a cause without a kind is the runner's");
  });

  it("follows the table: intents first, then exit and result", () => {
    assert.deepEqual(states({ intent: "interrupted", result: done }), [
      "interrupted",
      "cancelled",
      "yielded",
      "turn_interrupted",
    ]);
    assert.deepEqual(states({ intent: "cancelled" }), ["cancelled", "cancelled", "yielded", "run_cancelled"]);
    assert.deepEqual(states({ intent: "controller_closed", exit: null }), [
      "cancelled",
      "cancelled",
      "yielded",
      "controller_closed",
    ]);
    assert.deepEqual(states({ intent: "protocol_violation", result: done }), [
      "failed",
      "failed",
      "yielded",
      "harness_protocol_violation",
    ]);
    assert.deepEqual(states({ result: done }), ["completed", "succeeded", "done", "successful_process_and_result"]);
    assert.deepEqual(states({ exit: exit7, result: done }), ["failed", "failed", "yielded", "harness_process_failed"]);
    assert.deepEqual(states({}), ["failed", "failed", "yielded", "semantic_result_missing"]);
  });

  it("takes the disposition from the result, then the proposal, then a default", () => {
    assert.equal(
      reconcileTerminal(facts({ result: result({ reportedWorkDisposition: "needs_review" }) as never }))
        .reportedWorkDisposition,
      "needs_review",
    );
    assert.equal(reconcileTerminal(facts({ exit: exit7, result: yielded })).reportedWorkDisposition, "yielded");
    assert.equal(
      reconcileTerminal(
        facts({
          exit: exit7,
          proposal: terminal({
            turnTerminalState: "failed",
            runTerminalState: "failed",
            reportedWorkDisposition: "blocked",
          }),
        }),
      ).reportedWorkDisposition,
      "blocked",
    );
  });

  it("a success proposal with exit 7 becomes failed/failed/yielded, and is marked contradicted", () => {
    const t = reconcileTerminal(facts({ exit: exit7, result: done, proposal: terminal() }));
    assert.deepEqual(
      [t.turnTerminalState, t.runTerminalState, t.reportedWorkDisposition],
      ["failed", "failed", "yielded"],
    );
    assert.equal(t.reconciliation?.proposalValid, true);
    assert.equal(t.reconciliation?.proposalContradicted, true);
    assert.deepEqual(t.harnessTerminalProposal, terminal());
  });

  it("a failed proposal with exit 0 and a result becomes completed/succeeded", () => {
    const t = reconcileTerminal(
      facts({
        result: done,
        proposal: terminal({
          turnTerminalState: "failed",
          runTerminalState: "failed",
          reportedWorkDisposition: "yielded",
        }),
      }),
    );
    assert.deepEqual(
      [t.turnTerminalState, t.runTerminalState, t.reportedWorkDisposition],
      ["completed", "succeeded", "done"],
    );
    assert.equal(t.reconciliation?.proposalContradicted, true);
  });

  it("records an invalid proposal as invalid and ignores its disposition", () => {
    const t = reconcileTerminal(
      facts({ result: done, proposal: { schema: "paperclip.prp.terminal.v1", reportedWorkDisposition: "blocked" } }),
    );
    assert.equal(t.reconciliation?.proposalValid, false);
    assert.equal(t.reportedWorkDisposition, "done");
    assert.equal(t.reconciliation?.semanticResultObserved, true);
  });
});
