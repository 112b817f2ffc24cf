import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import type { OnCommittedEvent } from "../../src/authority/ingest.js";
import { COMMITTED_WINDOW, STORE_FILE } from "../../src/authority/limits.js";
import { authority, codeOf, connect, event, tempRoot, unwrap, withRun, type Authority } from "./support.js";

const semanticInput = (seq: number, correlation: Record<string, string> = {}) =>
  event(seq, 1, {
    eventType: "semantic_tool.input",
    priority: 1,
    payload: {
      semantic_tool: {
        schema: "paperclip.prp.semantic_tool.v1",
        schemaVersion: 1,
        phase: "input",
        operationId: "decide_approval",
        callId: "call_1",
        correlation: {
          runId: "run_1",
          normalizedSessionId: "session_1",
          turnId: "turn_1",
          itemId: "item_1",
          ...correlation,
        },
        idempotencyKey: "idem_1",
        content: { digest: `sha256:${"c4".repeat(32)}`, redactionDisposition: "redacted", references: [] },
      },
    },
  });

async function ready(
  dir: string,
  options: Parameters<typeof authority>[1] = {},
): Promise<{ a: Authority; conn: string }> {
  const a = authority(dir, options);
  await withRun(a);
  return { a, conn: (await connect(a)).connectionId };
}

const cursor = async (a: Authority) => (await a.store.run("run_1"))!.ackedSourceSeq;

describe("authority ingest (runtime.md §5.6)", () => {
  const tmp = tempRoot("prp-authority-ingest-");
  after(tmp.cleanup);

  it("commits in order, once each, and returns the cumulative ACK", async () => {
    const { a, conn } = await ready(tmp.dir());
    for (const seq of [1, 2, 3]) {
      const r = unwrap(await a.ingest.ingest("run_1", conn, event(seq)));
      assert.deepEqual(r, {
        outcome: "committed",
        sourceSeq: seq,
        sourceEventId: event(seq).sourceEventId,
        ack: { ackedSourceSeq: seq },
      });
    }
    assert.deepEqual(
      a.committed.map((c) => c.sourceEventId),
      [1, 2, 3].map((s) => event(s).sourceEventId),
    );
    const window = await a.store.committedWindow("run_1");
    assert.deepEqual(
      window.map((w) => [w.sourceSeq, w.eventType, w.priority, w.deliveryCount, w.logicalEffectCount]),
      [
        [1, "item.delta", 2, 1, 1],
        [2, "item.delta", 2, 1, 1],
        [3, "item.delta", 2, 1, 1],
      ],
    );
    assert.deepEqual(JSON.parse(window[0]!.envelope), event(1));
    await a.store.close();
  });

  it("refuses an event envelope newer than the negotiated version (wire.md O1), and takes an older one on a newer connection", async () => {
    const v1 = authority(tmp.dir());
    await withRun(v1, 1, 1);
    const conn = (await connect(v1, "run_1", 1)).connectionId;
    const goal = { eventType: "session.goal.snapshot", priority: 1, payload: { goal: null } };
    const refused = await v1.ingest.ingest("run_1", conn, {
      ...event(1, 1, goal),
      schema: "paperclip.prp.event.v2",
      schemaVersion: 2,
    });
    assert.deepEqual([codeOf(refused), refused.ok ? "" : refused.error.path], ["invalid_event", "/schema"]);
    assert.equal(await cursor(v1), 0, "nothing committed");
    await v1.store.close();
    const { a, conn: conn3 } = await ready(tmp.dir());
    assert.equal(
      unwrap(await a.ingest.ingest("run_1", conn3, event(1))).outcome,
      "committed",
      "a v1 envelope on a v3 connection",
    );
    assert.equal(
      unwrap(
        await a.ingest.ingest("run_1", conn3, {
          ...event(2, 1, goal),
          schema: "paperclip.prp.event.v3",
          schemaVersion: 3,
        }),
      ).outcome,
      "committed",
    );
    await a.store.close();
  });

  it("counts a byte-identical duplicate, commits nothing new and acknowledges the current cursor", async () => {
    const { a, conn } = await ready(tmp.dir());
    for (const seq of [1, 2, 3]) unwrap(await a.ingest.ingest("run_1", conn, event(seq)));
    const bytes = JSON.stringify(event(2));
    const dup = unwrap(await a.ingest.ingest("run_1", conn, JSON.parse(bytes)));
    assert.deepEqual(dup, {
      outcome: "duplicate",
      sourceSeq: 2,
      sourceEventId: event(2).sourceEventId,
      ack: { ackedSourceSeq: 3 },
    });
    // Key order is not content: the canonical form is what is compared.
    const reordered = Object.fromEntries(Object.entries(event(2)).reverse());
    assert.equal(unwrap(await a.ingest.ingest("run_1", conn, reordered)).outcome, "duplicate");
    assert.equal(a.committed.length, 3, "the callback ran once per event");
    assert.equal((await a.store.committedWindow("run_1"))[1]!.deliveryCount, 3);
    assert.equal((await a.store.run("run_1"))!.replayDeliveries, 2);
    assert.equal(await cursor(a), 3);
    await a.store.close();
  });

  it("refuses a changed duplicate, a gap and a stale sequence without moving the cursor", async () => {
    const { a, conn } = await ready(tmp.dir());
    for (const seq of [1, 2, 3]) unwrap(await a.ingest.ingest("run_1", conn, event(seq)));
    assert.equal(
      codeOf(await a.ingest.ingest("run_1", conn, event(2, 1, { payload: { text: "changed" } }))),
      "duplicate_mismatch",
    );
    assert.equal(
      codeOf(await a.ingest.ingest("run_1", conn, event(2, 1, { sourceSeq: 4 }))),
      "duplicate_mismatch",
      "a known id under another seq",
    );
    assert.equal(codeOf(await a.ingest.ingest("run_1", conn, event(5))), "sequence_gap");
    assert.equal(
      codeOf(await a.ingest.ingest("run_1", conn, event(2, 1, { sourceEventId: "event_other" }))),
      "sequence_stale",
    );
    assert.equal(await cursor(a), 3);
    assert.equal(a.committed.length, 3);
    assert.deepEqual(
      (await a.store.diagnostics("run_1")).map((d) => d.code),
      ["duplicate_mismatch", "duplicate_mismatch", "sequence_gap", "sequence_stale"],
    );
    assert.equal(
      unwrap(await a.ingest.ingest("run_1", conn, event(4))).ack.ackedSourceSeq,
      4,
      "the right next event still commits",
    );
    await a.store.close();
  });

  it("refuses an event with any one identity field changed", async () => {
    const { a, conn } = await ready(tmp.dir());
    for (const field of ["sourceInstanceId", "runId", "normalizedSessionId", "turnId", "itemId"]) {
      const refused = await a.ingest.ingest("run_1", conn, event(1, 1, { [field]: `${field}_other` }));
      assert.equal(codeOf(refused), "identity_mismatch", field);
      assert.equal(refused.ok ? "" : refused.error.path, `/${field}`);
    }
    const { normalizedSessionId: _, ...sessionless } = event(1);
    assert.equal(
      codeOf(await a.ingest.ingest("run_1", conn, sessionless)),
      "identity_mismatch",
      "the session is required",
    );
    const { turnId: _t, itemId: _i, ...runLevel } = event(1);
    assert.equal(
      unwrap(await a.ingest.ingest("run_1", conn, runLevel)).outcome,
      "committed",
      "turn and item are checked when present",
    );
    assert.equal(a.committed.length, 1);
    await a.store.close();
  });

  it("refuses a semantic-tool input whose correlation is not the run's, and commits one that is", async () => {
    const { a, conn } = await ready(tmp.dir());
    for (const field of ["runId", "normalizedSessionId", "turnId", "itemId"]) {
      const refused = await a.ingest.ingest("run_1", conn, semanticInput(1, { [field]: "other" }));
      assert.equal(codeOf(refused), "semantic_correlation_mismatch", field);
    }
    const mcp = { ...semanticInput(1, { turnId: "other" }), eventType: "mcp_app.tool_input" };
    assert.equal(codeOf(await a.ingest.ingest("run_1", conn, mcp)), "semantic_correlation_mismatch");
    assert.equal(unwrap(await a.ingest.ingest("run_1", conn, semanticInput(1))).outcome, "committed");
    await a.store.close();
  });

  it("refuses a schema-invalid event as a malformed frame", async () => {
    const { a, conn } = await ready(tmp.dir());
    for (const bad of [
      event(1, 1, { eventType: "no.such.type" }),
      event(1, 1, { sourceSeq: 0 }),
      { ...event(1), schema: "paperclip.prp.event.v9" },
      "not an object",
      null,
    ]) {
      assert.equal(codeOf(await a.ingest.ingest("run_1", conn, bad)), "invalid_event", JSON.stringify(bad));
    }
    await a.ingest.recordMalformedFrame("run_1", "invalid_json", "frame 3 is not JSON");
    const run = (await a.store.run("run_1"))!;
    assert.equal(run.malformedFrames, 6);
    assert.equal(run.ackedSourceSeq, 0);
    await a.store.close();
  });

  it("an onCommittedEvent that throws persists nothing and sends no ACK; the retry commits once", async () => {
    let failNext = true;
    const seen: string[] = [];
    const { a, conn } = await ready(tmp.dir(), {
      onCommittedEvent: (e) => {
        seen.push(e.sourceEventId);
        if (failNext) {
          failNext = false;
          throw new Error("database unavailable");
        }
      },
    });
    const refused = await a.ingest.ingest("run_1", conn, event(1));
    assert.equal(codeOf(refused), "callback_failed");
    assert.equal(await cursor(a), 0);
    assert.deepEqual(await a.store.committedWindow("run_1"), []);
    assert.deepEqual(await a.store.diagnostics("run_1"), [], "nothing at all is written");
    const retried = unwrap(await a.ingest.ingest("run_1", conn, event(1)));
    assert.equal(retried.outcome, "committed");
    assert.equal(unwrap(await a.ingest.ingest("run_1", conn, event(1))).outcome, "duplicate");
    assert.deepEqual(
      seen,
      [event(1).sourceEventId, event(1).sourceEventId],
      "twice: the failure, then the commit; never for the duplicate",
    );
    assert.equal((await a.store.committedWindow("run_1"))[0]!.deliveryCount, 2);
    await a.store.close();
  });

  it("after a crash between commit and ACK, the reopened store deduplicates the redelivery", async () => {
    const dir = tmp.dir();
    const { a, conn } = await ready(dir);
    unwrap(await a.ingest.ingest("run_1", conn, event(1)));
    unwrap(await a.ingest.ingest("run_1", conn, event(2))); // committed; its ACK is lost with the process
    await a.store.close();

    const b = authority(dir);
    const run = (await b.store.run("run_1"))!;
    assert.equal(run.ackedSourceSeq, 2, "the welcome reports the committed cursor");
    const conn2 = (await connect(b)).connectionId;
    assert.equal(conn2, "connection_2");
    const redelivered = unwrap(await b.ingest.ingest("run_1", conn2, event(2)));
    assert.deepEqual([redelivered.outcome, redelivered.ack.ackedSourceSeq], ["duplicate", 2]);
    assert.equal(b.committed.length, 0, "no second logical event");
    assert.equal(unwrap(await b.ingest.ingest("run_1", conn2, event(3))).ack.ackedSourceSeq, 3);
    assert.equal((await b.store.run("run_1"))!.replayDeliveries, 1);
    await b.store.close();
  });

  it("the host's rows commit atomically with the cursor: a failure after it wrote them leaves neither, and the redelivery writes them once", async () => {
    const dir = tmp.dir();
    let crash = true;
    const onCommittedEvent: OnCommittedEvent = (e, { transaction }) => {
      assert.equal(transaction.kind, "sqlite");
      if (transaction.kind !== "sqlite") return;
      transaction.db.prepare("INSERT INTO host_events (source_event_id) VALUES (?)").run(e.sourceEventId);
      if (crash) {
        crash = false;
        throw new Error("killed after the host's insert");
      }
    };
    const { a, conn } = await ready(dir, { onCommittedEvent });
    const setup = new Database(join(dir, STORE_FILE));
    setup.exec("CREATE TABLE host_events (source_event_id TEXT PRIMARY KEY)"); // the control plane's own table
    setup.close();
    assert.equal(codeOf(await a.ingest.ingest("run_1", conn, event(1))), "callback_failed");
    const hostRows = (): number => {
      const raw = new Database(join(dir, STORE_FILE), { readonly: true });
      const n = (raw.prepare("SELECT COUNT(*) AS n FROM host_events").get() as { n: number }).n;
      raw.close();
      return n;
    };
    assert.equal(hostRows(), 0, "the host's row was rolled back with the event");
    assert.equal(await cursor(a), 0, "the cursor did not move");
    assert.deepEqual(await a.store.eventLog("run_1", 0, 10), [], "nothing in the run log");
    assert.equal(unwrap(await a.ingest.ingest("run_1", conn, event(1))).outcome, "committed");
    assert.equal(unwrap(await a.ingest.ingest("run_1", conn, event(1))).outcome, "duplicate");
    assert.equal(hostRows(), 1, "the host's row, once");
    assert.deepEqual(
      (await a.store.eventLog("run_1", 0, 10)).map((e) => e.sourceSeq),
      [1],
    );
    await a.store.close();
  });

  it("refuses events from a superseded connection", async () => {
    const { a, conn } = await ready(tmp.dir());
    unwrap(await a.ingest.ingest("run_1", conn, event(1)));
    const newer = (await connect(a)).connectionId;
    assert.equal(codeOf(await a.ingest.ingest("run_1", conn, event(2))), "connection_superseded");
    assert.equal(unwrap(await a.ingest.ingest("run_1", newer, event(2))).ack.ackedSourceSeq, 2);
    assert.equal(codeOf(await a.ingest.ingest("run_9", newer, event(3))), "unknown_run");
    await a.store.close();
  });

  it("keeps a window of 64: a redelivery that has left it is stale", async () => {
    const { a, conn } = await ready(tmp.dir());
    const total = COMMITTED_WINDOW + 6;
    // Sent without waiting for each other: ingest serialises one run's events in call order.
    const results = await Promise.all(
      Array.from({ length: total }, (_, i) => a.ingest.ingest("run_1", conn, event(i + 1))),
    );
    assert.deepEqual(
      results.map((r) => unwrap(r).ack.ackedSourceSeq),
      Array.from({ length: total }, (_, i) => i + 1),
    );
    const window = await a.store.committedWindow("run_1");
    assert.equal(window.length, COMMITTED_WINDOW);
    assert.equal(window[0]!.sourceSeq, total - COMMITTED_WINDOW + 1);
    assert.equal(codeOf(await a.ingest.ingest("run_1", conn, event(3))), "sequence_stale");
    assert.equal(unwrap(await a.ingest.ingest("run_1", conn, event(total - 1))).outcome, "duplicate");
    await a.store.close();
  });
});
