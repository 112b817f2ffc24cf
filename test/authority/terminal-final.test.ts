import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { terminal } from "../contract/samples.js";
import { authority, codeOf, connect, event, tempRoot, unwrap, withRun } from "./support.js";

/** The run's one terminal, as its runner would send it at `seq`. */
const terminalEvent = (seq: number, overrides: Record<string, unknown> = {}) =>
  event(seq, 1, { eventType: "run.terminal", priority: 0, payload: terminal(), ...overrides });

describe("a committed run.terminal is final", () => {
  const tmp = tempRoot("prp-authority-terminal-");
  after(tmp.cleanup);

  it("refuses any event after the terminal, typed, with nothing committed and the callback never called", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const conn = (await connect(a)).connectionId;
    unwrap(await a.ingest.ingest("run_1", conn, event(1)));
    unwrap(await a.ingest.ingest("run_1", conn, terminalEvent(2)));
    for (const after of [
      event(3),
      terminalEvent(3, {
        payload: terminal({
          runTerminalState: "failed",
          turnTerminalState: "failed",
          reportedWorkDisposition: "yielded",
        }),
      }),
    ]) {
      const refused = await a.ingest.ingest("run_1", conn, after);
      assert.equal(codeOf(refused), "event_after_terminal", JSON.stringify(after.eventType));
      assert.equal(refused.ok ? "" : refused.error.path, "/sourceSeq");
    }
    assert.equal(
      codeOf(await a.ingest.ingest("run_1", conn, event(4))),
      "event_after_terminal",
      "a gap after the terminal is refused as after the terminal",
    );
    assert.deepEqual(
      a.committed.map((c) => c.sourceEventId),
      [event(1).sourceEventId, terminalEvent(2).sourceEventId],
      "the host saw one terminal and nothing after it",
    );
    const run = (await a.store.run("run_1"))!;
    assert.equal(run.ackedSourceSeq, 2);
    assert.equal(run.terminalSourceSeq, 2);
    assert.deepEqual(
      (await a.store.diagnostics("run_1")).map((d) => d.code),
      ["event_after_terminal", "event_after_terminal", "event_after_terminal"],
      "nothing refused silently",
    );
    // The terminal itself, redelivered with the same bytes (its ACK was lost), is still acknowledged.
    const again = unwrap(await a.ingest.ingest("run_1", conn, terminalEvent(2)));
    assert.deepEqual([again.outcome, again.ack.ackedSourceSeq], ["duplicate", 2]);
    await a.store.close();
  });

  it("the store itself refuses a commit after the terminal, and still after a reopen with more than a window of events before it", async () => {
    const dir = tmp.dir();
    const a = authority(dir);
    await withRun(a);
    const conn = (await connect(a)).connectionId;
    for (let seq = 1; seq <= 70; seq++) unwrap(await a.ingest.ingest("run_1", conn, event(seq)));
    unwrap(await a.ingest.ingest("run_1", conn, terminalEvent(71)));
    const after = {
      sourceSeq: 72,
      sourceEventId: event(72).sourceEventId as string,
      eventType: "item.delta",
      priority: 2,
      envelope: JSON.stringify(event(72)),
    };
    assert.equal(codeOf(await a.store.commitEvent("run_1", conn, after, a.clock.now())), "event_after_terminal");
    await a.store.close();

    const b = authority(dir);
    assert.equal((await b.store.run("run_1"))!.terminalSourceSeq, 71, "the terminal is known after a reopen");
    const conn2 = (await connect(b)).connectionId;
    assert.equal(codeOf(await b.ingest.ingest("run_1", conn2, event(72))), "event_after_terminal");
    assert.equal(codeOf(await b.store.commitEvent("run_1", conn2, after, b.clock.now())), "event_after_terminal");
    assert.equal((await b.store.run("run_1"))!.ackedSourceSeq, 71);
    assert.equal(b.committed.length, 0);
    await b.store.close();
  });

  it("a run with no terminal yet has terminalSourceSeq null and commits on", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const conn = (await connect(a)).connectionId;
    unwrap(await a.ingest.ingest("run_1", conn, event(1)));
    assert.equal((await a.store.run("run_1"))!.terminalSourceSeq, null);
    assert.equal(unwrap(await a.ingest.ingest("run_1", conn, event(2))).outcome, "committed");
    await a.store.close();
  });
});
