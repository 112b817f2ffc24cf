import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runDurable } from "../../src/fault/durable-run.js";
import { loadedScript } from "../support/scripts.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { until } from "../support/until.js";

describe("a durable runner killed with SIGKILL", () => {
  let out: string;
  before(() => {
    out = mkdtempSync(join(tmpdir(), "prp-durable-sigkill-"));
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it("leaves no harness process: its orphan guard ends the group within 2 s", async () => {
    const script = loadedScript("linger");
    let harnessGroup: number | undefined;
    try {
      const facts = await runDurable({
        script,
        dir: out,
        delayMs: 0,
        faults: [
          {
            afterEvents: 1,
            act: async (ctx) => {
              const waiting = () =>
                ctx
                  .committed()
                  .some(
                    (e) => e.eventType === "runtime.phase.changed" && (e.payload as any).phase === "awaiting_interrupt",
                  );
              await until(waiting, "the turn to wait for an interrupt");
              const group = (ctx.committed().find((e) => e.eventType === "harness.ready")!.payload as any)
                .pid as number;
              harnessGroup = group;
              assert.ok(liveGroupMembers(group).length >= 2, "harness and its worker are running");
              process.kill(ctx.runner().pid, "SIGKILL"); // the runner alone, not its group
              await until(
                () => liveGroupMembers(group).length === 0,
                () => `the harness group to end; survivors: ${describeProcesses(liveGroupMembers(group))}`,
              );
            },
          },
        ],
      });
      assert.notEqual(harnessGroup, undefined, "the fault ran");
      assert.deepEqual(
        facts.runnerExits.map((e) => e.signal),
        ["SIGKILL"],
      );
      assert.equal(
        facts.events.some((e) => e.eventType === "run.terminal"),
        false,
        "the run did not end: its runner was killed",
      );
    } finally {
      if (harnessGroup !== undefined && liveGroupMembers(harnessGroup).length > 0)
        process.kill(-harnessGroup, "SIGKILL");
    }
  });
});
