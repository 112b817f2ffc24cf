import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, it } from "node:test";
import type { DurableRunFacts } from "../../src/fault/durable-run.js";
import { FAULTS } from "../../src/fault/faults.js";
import { signalledRunFindings } from "../../src/fault/signal-faults.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { liveGroupMembers } from "../support/processes.js";
import { until } from "../support/until.js";

const event = (eventType: string, payload: Record<string, unknown>) => ({ eventType, payload }) as unknown as PrpEvent;
const terminal = (runTerminalState: string, reason: string) =>
  event("run.terminal", { runTerminalState, reconciliation: { reason } });
const facts = (events: PrpEvent[]): DurableRunFacts => ({
  runId: "run_1",
  dir: "/nonexistent",
  events,
  run: undefined,
  runnerExits: [],
  runnerPids: [],
  survivors: [],
  runnerLogs: [],
  tickets: [],
  faultSteps: { planned: 1, notReached: 0 },
});

describe("the signal faults' own check", () => {
  it("there is one fault per stop signal, each expecting the exit status 128 + the signal's number", () => {
    assert.deepEqual(
      ["signal-hup", "signal-int", "signal-quit", "signal-term"].map((n) => FAULTS[n]?.runnerExit),
      [129, 130, 131, 143],
    );
  });

  it("passes a cancelled run whose harness group is gone", () => {
    // A group id above the largest pid_max Linux allows (2^22): no process has it.
    assert.equal(
      signalledRunFindings(
        facts([event("harness.ready", { pid: 2 ** 22 + 1 }), terminal("cancelled", "run_cancelled")]),
      ),
      null,
    );
  });

  it("fails a run whose terminal is not the cancel's", () => {
    assert.match(
      signalledRunFindings(facts([terminal("succeeded", "successful_process_and_result")]))!,
      /terminal is succeeded \(successful_process_and_result\), not cancelled/,
    );
    assert.match(
      signalledRunFindings(facts([terminal("cancelled", "controller_closed")]))!,
      /not cancelled \(run_cancelled\)/,
    );
  });

  it("fails a run that left a process of its harness group alive, as /proc shows it", async () => {
    const survivor = spawn("/bin/sh", ["-c", "sleep 30"], { detached: true, stdio: "ignore", env: {} });
    try {
      await until(() => liveGroupMembers(survivor.pid!).length > 0, "the stand-in harness group to be live");
      const found = signalledRunFindings(
        facts([event("harness.ready", { pid: survivor.pid }), terminal("cancelled", "run_cancelled")]),
      );
      assert.match(found!, new RegExp(`harness group ${survivor.pid} still has live processes`));
    } finally {
      process.kill(-survivor.pid!, "SIGKILL");
    }
  });
});
