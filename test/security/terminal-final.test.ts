import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { terminal } from "../contract/samples.js";
import type { RunnerLease } from "../../src/transport/index.js";
import { HandRunner, SecureAuthority, prpEvent } from "./support.js";

/**
 * Issue 9, item 1, on the wire: a crafted runner that sends anything after its committed
 * run.terminal is refused by a real authority, typed (`event_after_terminal`), its connection
 * closed, and the host's record keeps one terminal, last. The terminal itself, resent with the
 * same bytes, is still acknowledged.
 */
describe("security: the authority refuses any event after a committed run.terminal", () => {
  let authority: SecureAuthority;
  before(async () => {
    authority = await SecureAuthority.start();
  });
  after(() => authority.close());

  it("a second terminal, then any event, from the same or a new connection: refused, closed, diagnosed, nothing committed", async () => {
    const run = await authority.newRun();
    const terminalOf = (seq: number, state: "succeeded" | "failed") =>
      prpEvent(run, seq, {
        eventType: "run.terminal",
        priority: 0,
        payload: terminal(
          state === "failed"
            ? { runTerminalState: "failed", turnTerminalState: "failed", reportedWorkDisposition: "yielded" }
            : {},
        ),
      });
    const sendRaw = (runner: HandRunner, event: Record<string, unknown>) =>
      runner.ws.send(runner.seal(runner.envelopeText("event", { event })));

    const first = await HandRunner.dial(authority.url(run.runId), run);
    let lease: RunnerLease;
    try {
      lease = (await first.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId) })).lease;
      first.sendEvent(1);
      sendRaw(first, terminalOf(2, "succeeded"));
      await first.ackOf(2);
      sendRaw(first, terminalOf(3, "failed")); // the second, contradictory terminal
      assert.deepEqual(
        await first.closed(),
        { code: 1008, reason: "event_after_terminal" },
        "the connection is closed, naming the refusal",
      );
    } finally {
      first.close();
    }
    await authority.diagnosed(run.runId, "event_after_terminal");

    const second = await HandRunner.dial(authority.url(run.runId), run);
    try {
      const session = await second.authenticate(lease);
      assert.equal(session.welcome.ackedSourceSeq, 2);
      sendRaw(second, terminalOf(2, "succeeded"));
      assert.equal((await second.ackOf(2)).at(-1)?.kind, "ack", "the committed terminal, resent, is acknowledged");
      second.sendEvent(3);
      assert.deepEqual(await second.closed(), { code: 1008, reason: "event_after_terminal" });
    } finally {
      second.close();
    }
    await authority.diagnosed(run.runId, "event_after_terminal", 1);

    const committed = authority.committed.get(run.runId) ?? [];
    assert.deepEqual(
      committed.map((e) => [e.sourceSeq, e.eventType]),
      [
        [1, "item.delta"],
        [2, "run.terminal"],
      ],
    );
    assert.equal((committed[1]!.payload as { runTerminalState?: string }).runTerminalState, "succeeded");
    const snapshot = await authority.snapshot(run.runId);
    assert.equal(snapshot.ackedSourceSeq, 2);
    assert.equal(snapshot.terminalSourceSeq, 2);
    const refusals = (await authority.diagnostics(run.runId)).filter((d) => d.code === "event_after_terminal");
    assert.equal(refusals.length, 2);
    assert.match(refusals[0]!.message, /sourceSeq 3 follows the run's committed run\.terminal \(sourceSeq 2\)/);
  });
});
