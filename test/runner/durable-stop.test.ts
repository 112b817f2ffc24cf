import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { durableRunner, SecureAuthority, until } from "../security/support.js";

describe("a durable runner stopped while the authority keeps refusing its events for a reason that may pass", () => {
  let authority: SecureAuthority;
  let failing = true;
  const delivered: PrpEvent[] = [];
  before(async () => {
    // The host's callback fails from event 3 on: the authority answers callback_failed and closes, and the runner redials.
    authority = await SecureAuthority.start({
      onCommittedEvent: (event) => {
        if (failing && event.sourceSeq >= 3) throw new Error("the control plane's database is down");
        delivered.push(event);
      },
    });
  });
  after(async () => authority.close());

  it("stops redialling once its delivery time is out: exit 3 with the cancelled terminal kept, which a relaunch delivers", async () => {
    const run = await authority.newRun();
    const { runner, log, stateDir } = await durableRunner(authority, run, {
      stopDeliveryMs: 1_000,
      readyTimeoutMs: 30_000,
    });
    const outcome = runner.run();
    await until(
      async () => (await authority.snapshot(run.runId)).connectionCount >= 3,
      "the runner to be redialling after callback_failed",
      30_000,
    );
    runner.cancel(); // what prp-runnerd does on SIGTERM
    const stopped = await Promise.race([
      outcome,
      new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 20_000).unref()),
    ]);
    assert.deepEqual(stopped, { code: 3, reason: "stopped_before_delivery" }, log.slice(-5).join("\n"));
    assert.ok(
      !delivered.some((e) => e.eventType === "run.terminal"),
      "nothing of the terminal reached the host while it failed",
    );

    // The control plane recovers; the run's supervisor relaunches the runner on the same state with a fresh ticket.
    failing = false;
    const { runner: relaunched, log: relaunchLog } = await durableRunner(authority, run, {
      stateDir,
      bootstrapToken: await authority.ticket(run.runId),
    });
    assert.deepEqual(await relaunched.run(), { code: 0, reason: "run_delivered" }, relaunchLog.join("\n"));
    const terminals = delivered.filter((e) => e.eventType === "run.terminal");
    assert.equal(terminals.length, 1);
    assert.equal(delivered.at(-1)!.eventType, "run.terminal");
    assert.equal((terminals[0]!.payload as { runTerminalState: string }).runTerminalState, "cancelled");
    assert.deepEqual(
      delivered.map((e) => e.sourceSeq),
      delivered.map((_, i) => i + 1),
      "every event once, in order",
    );
  });
});
