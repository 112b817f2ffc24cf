import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { COMMITTED_WINDOW, MAX_DIAGNOSTICS, MAX_RUNNER_CONNECTIONS } from "../../../src/authority/limits.js";
import { ServerKey } from "../../../src/authority/server-key.js";
import type { Result } from "../../../src/authority/errors.js";
import type {
  AuthorityStore,
  BatchedEvent,
  NewCommand,
  NewCommittedEvent,
  RenewLeaseRequest,
  StoreTransaction,
} from "../../../src/authority/store.js";
import { authority, codeOf, connect, event, identity, serverKey, unwrap, withRun, type Authority } from "../support.js";

/** One renewal, as a group of one. */
const renewOne = async (s: AuthorityStore, req: RenewLeaseRequest) => (await s.renewLeases([req]))[0]!;

/**
 * One store implementation as the conformance suite drives it. Each `open` is a new, empty
 * store; `reopen` opens the same database again (a restart), `raw` reads it apart from the
 * store's code, and `host*` are a control plane's own rows, written through the transaction
 * handle of `commitEvent`.
 */
export interface StoreFactory {
  open(): Promise<OpenedStore>;
  /** Stops what the factory started (a server). */
  stop(): Promise<void>;
}

export interface OpenedStore {
  store: AuthorityStore;
  reopen(options?: { serverKey?: ServerKey; adoptServerKey?: boolean }): Promise<AuthorityStore>;
  /** The stored auth_key_digest column, as the database holds it. */
  rawAuthKeys(): Promise<string[]>;
  createHostTable(): Promise<void>;
  hostInsert(transaction: StoreTransaction, sourceEventId: string): Promise<void>;
  hostRows(): Promise<string[]>;
  /** The run's row as the database holds it, read apart from the store's code. */
  rawRun(runId: string): Promise<Record<string, unknown>>;
  /** The run's acked_source_seq as a host's callback reads it inside the store's transaction. */
  cursorWithin(transaction: StoreTransaction, runId: string): Promise<number>;
}

/** The canonical JSON a committed event's row keeps (the store compares it as text). */
const row = (seq: number, overrides: Partial<NewCommittedEvent> = {}, run = 1): NewCommittedEvent => {
  const e = event(seq, run);
  return {
    sourceSeq: seq,
    sourceEventId: e.sourceEventId as string,
    eventType: e.eventType as string,
    priority: e.priority as number,
    envelope: JSON.stringify(e),
    ...overrides,
  };
};

const command = (n: number, overrides: Partial<NewCommand> = {}): NewCommand => ({
  commandId: `command_${n}`,
  controllerSeq: n,
  type: "turn.start",
  payload: `{"n":${n}}`,
  envelope: `{"commandId":"command_${n}"}`,
  ...overrides,
});

/** A further part of the suite (one aggregate's tests), run inside it, before the factory stops. */
export type ConformancePart = (name: string, factory: StoreFactory) => void;

/** Every method of AuthorityStore, its contract, the same tests for each implementation. */
export function storeConformance(name: string, factory: StoreFactory, parts: readonly ConformancePart[] = []): void {
  describe(`AuthorityStore conformance: ${name}`, () => {
    after(() => factory.stop());
    for (const part of parts) part(name, factory);

    /** A fresh store with run_1 registered and a runner connected (connection_1). */
    async function connected(): Promise<{ o: OpenedStore; a: Authority; conn: string }> {
      const o = await factory.open();
      const a = authority("", { store: o.store });
      await withRun(a);
      return { o, a, conn: (await connect(a)).connectionId };
    }

    it("registerRun creates a run once, finds it again, and refuses another identity; run, runCursor, runIds read it", async () => {
      const o = await factory.open();
      const s = o.store;
      const created = unwrap(await s.registerRun(identity(2), { protocolVersion: 3, nowMs: 1 }));
      assert.equal(created.ackedSourceSeq, 0);
      assert.equal(created.currentConnectionId, null);
      assert.deepEqual(unwrap(await s.registerRun(identity(2), { protocolVersion: 3, nowMs: 2 })), created);
      assert.equal(
        codeOf(await s.registerRun(identity(2, { turnId: "other" }), { protocolVersion: 3, nowMs: 3 })),
        "run_identity_mismatch",
      );
      unwrap(await s.registerRun(identity(1), { protocolVersion: 2, nowMs: 4 }));
      assert.deepEqual(await s.runIds(), ["run_1", "run_2"]);
      assert.equal(await s.run("run_9"), undefined);
      assert.equal(await s.runCursor("run_9"), undefined);
      assert.deepEqual(await s.runCursor("run_1"), {
        identity: identity(1),
        ackedSourceSeq: 0,
        terminalSourceSeq: null,
        currentConnectionId: null,
        revocationEpoch: 0,
        protocolVersion: 2,
      });
      assert.equal((await s.run("run_1"))!.protocolVersion, 2);
      await s.close();
    });

    it("commitEvent is compare-and-set: a gap, a stale seq, a superseded connection, an unknown run or a reused id change nothing", async () => {
      const { o, a, conn } = await connected();
      const s = o.store;
      unwrap(await s.commitEvent("run_1", conn, row(1), 10));
      assert.equal(codeOf(await s.commitEvent("run_1", conn, row(3), 11)), "sequence_gap");
      assert.equal(codeOf(await s.commitEvent("run_1", conn, row(1), 11)), "sequence_stale");
      assert.equal(codeOf(await s.commitEvent("run_1", "connection_9", row(2), 11)), "connection_superseded");
      assert.equal(codeOf(await s.commitEvent("run_9", conn, row(2), 11)), "unknown_run");
      assert.equal(
        codeOf(await s.commitEvent("run_1", conn, row(2, { sourceEventId: row(1).sourceEventId }), 11)),
        "duplicate_mismatch",
      );
      const newer = (await connect(a)).connectionId;
      assert.equal(
        codeOf(await s.commitEvent("run_1", conn, row(2), 12)),
        "connection_superseded",
        "the old connection lost the run",
      );
      assert.equal((await s.runCursor("run_1"))!.ackedSourceSeq, 1);
      assert.deepEqual(
        (await s.eventLog("run_1", 0, 10)).map((e) => e.sourceSeq),
        [1],
      );
      unwrap(await s.commitEvent("run_1", newer, row(2), 13));
      await s.close();
    });

    it("two concurrent commits of the same sourceSeq: exactly one wins", async () => {
      const { o, conn } = await connected();
      const results = await Promise.all([
        o.store.commitEvent("run_1", conn, row(1), 1),
        o.store.commitEvent("run_1", conn, row(1), 1),
      ]);
      assert.deepEqual(results.map((r) => r.ok).sort(), [false, true]);
      assert.equal(codeOf(results.find((r) => !r.ok)!), "sequence_stale");
      assert.equal((await o.store.eventLog("run_1", 0, 10)).length, 1);
      await o.store.close();
    });

    it("keeps the window at 64 and every committed event in the run log, in order, paged by afterSourceSeq and limit", async () => {
      const { o, conn } = await connected();
      const s = o.store;
      const total = COMMITTED_WINDOW + 6;
      for (let seq = 1; seq <= total; seq++) unwrap(await s.commitEvent("run_1", conn, row(seq), 1000 + seq));
      const window = await s.committedWindow("run_1");
      assert.deepEqual(
        window.map((e) => e.sourceSeq),
        Array.from({ length: COMMITTED_WINDOW }, (_, i) => total - COMMITTED_WINDOW + 1 + i),
      );
      const log = await s.eventLog("run_1", 0, 1000);
      assert.deepEqual(
        log.map((e) => e.sourceSeq),
        Array.from({ length: total }, (_, i) => i + 1),
      );
      assert.deepEqual(log[0], { ...row(1), committedAtUnixMs: 1001 });
      assert.deepEqual(
        (await s.eventLog("run_1", 65, 3)).map((e) => e.sourceSeq),
        [66, 67, 68],
      );
      assert.deepEqual(await s.eventLog("run_1", total, 10), []);
      assert.deepEqual(await s.eventLog("run_9", 0, 10), []);
      assert.equal(await s.committedEvent("run_1", row(1).sourceEventId), undefined, "out of the window");
      assert.equal(
        codeOf(await s.countRedelivery("run_1", conn, row(1).sourceEventId, row(1).envelope)),
        "sequence_stale",
      );
      await s.close();
    });

    it("countRedelivery counts an exact redelivery and refuses other content or another connection", async () => {
      const { o, conn } = await connected();
      const s = o.store;
      unwrap(await s.commitEvent("run_1", conn, row(1), 1));
      assert.deepEqual(unwrap(await s.countRedelivery("run_1", conn, row(1).sourceEventId, row(1).envelope)), {
        ackedSourceSeq: 1,
      });
      assert.equal(codeOf(await s.countRedelivery("run_1", conn, row(1).sourceEventId, "{}")), "duplicate_mismatch");
      assert.equal(
        codeOf(await s.countRedelivery("run_1", "connection_9", row(1).sourceEventId, row(1).envelope)),
        "connection_superseded",
      );
      assert.equal((await s.committedEvent("run_1", row(1).sourceEventId))!.deliveryCount, 2);
      assert.equal((await s.run("run_1"))!.replayDeliveries, 1);
      await s.close();
    });

    it("withinCommit runs inside the commit: its rows commit with the cursor, and its failure rolls back both", async () => {
      const { o, conn } = await connected();
      const s = o.store;
      await o.createHostTable();
      const failed = await s.commitEvent("run_1", conn, row(1), 1, async (tx) => {
        await o.hostInsert(tx, "first try");
        throw new Error("the control plane's insert failed");
      });
      assert.equal(codeOf(failed), "callback_failed");
      assert.deepEqual(await o.hostRows(), []);
      assert.equal((await s.runCursor("run_1"))!.ackedSourceSeq, 0);
      assert.deepEqual(await s.eventLog("run_1", 0, 10), []);
      assert.deepEqual(await s.committedWindow("run_1"), []);
      let called = 0;
      const refused = await s.commitEvent("run_1", conn, row(2), 1, () => void called++);
      assert.equal(codeOf(refused), "sequence_gap");
      assert.equal(called, 0, "a refused commit never reaches the host");
      unwrap(await s.commitEvent("run_1", conn, row(1), 2, (tx) => o.hostInsert(tx, row(1).sourceEventId)));
      assert.deepEqual(await o.hostRows(), [row(1).sourceEventId]);
      assert.equal((await s.runCursor("run_1"))!.ackedSourceSeq, 1);
      await s.close();
    });

    it("commitEvents is one transaction of commitEvent's rules: a refused item and a failing host roll back alone, the others commit", async () => {
      const { o, a, conn } = await connected();
      const s = o.store;
      await withRun(a, 2);
      const conn2 = (await connect(a, "run_2")).connectionId;
      await o.createHostTable();
      const hosted: string[] = [];
      const host = (id: string) => async (tx: StoreTransaction) => {
        hosted.push(id);
        await o.hostInsert(tx, id);
      };
      const results = await s.commitEvents(
        [
          { runId: "run_1", connectionId: conn, event: row(1), withinCommit: host(row(1).sourceEventId) },
          {
            runId: "run_2",
            connectionId: conn2,
            event: row(1, {}, 2),
            withinCommit: async (tx) => {
              await host("doomed")(tx);
              throw new Error("the control plane's ledger is locked");
            },
          },
          { runId: "run_1", connectionId: conn, event: row(2), withinCommit: host(row(2).sourceEventId) },
          { runId: "run_1", connectionId: conn, event: row(4), withinCommit: host("never") },
          { runId: "run_2", connectionId: conn2, event: row(2, {}, 2) },
          { runId: "run_1", connectionId: "connection_9", event: row(3) },
        ],
        5,
      );
      assert.deepEqual(
        results.map((r) => (r.ok ? r.value.ackedSourceSeq : r.error.code)),
        [1, "callback_failed", 2, "sequence_gap", "sequence_gap", "connection_superseded"],
      );
      assert.deepEqual(
        hosted.sort(),
        ["doomed", row(1).sourceEventId, row(2).sourceEventId].sort(),
        "a refused item never reaches the host",
      );
      assert.deepEqual(
        await o.hostRows(),
        [row(1).sourceEventId, row(2).sourceEventId].sort(),
        "the failed host's row rolled back with its event, the others' committed",
      );
      assert.deepEqual(
        (await s.eventLog("run_1", 0, 10)).map((e) => e.sourceSeq),
        [1, 2],
      );
      assert.equal((await s.runCursor("run_1"))!.ackedSourceSeq, 2);
      assert.deepEqual(await s.eventLog("run_2", 0, 10), []);
      assert.deepEqual(await s.committedWindow("run_2"), []);
      assert.equal((await s.runCursor("run_2"))!.ackedSourceSeq, 0);
      // The refused event is committed by the next batch, as a runner's resend would be.
      const retried = await s.commitEvents(
        [
          {
            runId: "run_2",
            connectionId: conn2,
            event: row(1, {}, 2),
            withinCommit: host(row(1, {}, 2).sourceEventId),
          },
        ],
        6,
      );
      assert.deepEqual(
        retried.map((r) => r.ok && r.value.ackedSourceSeq),
        [1],
      );
      assert.deepEqual(
        await o.hostRows(),
        [row(1).sourceEventId, row(2).sourceEventId, row(1, {}, 2).sourceEventId].sort(),
      );
      assert.deepEqual(await s.commitEvents([], 7), [], "an empty batch commits nothing");
      await s.close();
    });

    it("a host's callback reads its run's cursor at its own event, after plain items of the batch; a failing host keeps theirs", async () => {
      const { o, conn } = await connected();
      const s = o.store;
      await o.createHostTable();
      const seen: number[] = [];
      const reads = async (tx: StoreTransaction) => void seen.push(await o.cursorWithin(tx, "run_1"));
      const results = await s.commitEvents(
        [
          { runId: "run_1", connectionId: conn, event: row(1) },
          { runId: "run_1", connectionId: conn, event: row(2) },
          {
            runId: "run_1",
            connectionId: conn,
            event: row(3),
            withinCommit: async (tx) => {
              await reads(tx);
              throw new Error("the ledger refused it");
            },
          },
          { runId: "run_1", connectionId: conn, event: row(3) },
          { runId: "run_1", connectionId: conn, event: row(4), withinCommit: reads },
          { runId: "run_1", connectionId: conn, event: row(5) },
        ],
        5,
      );
      assert.deepEqual(
        results.map((r) => (r.ok ? r.value.ackedSourceSeq : r.error.code)),
        [1, 2, "callback_failed", 3, 4, 5],
      );
      assert.deepEqual(seen, [3, 4], "each host saw the cursor at its own event");
      assert.equal((await s.runCursor("run_1"))!.ackedSourceSeq, 5);
      assert.deepEqual(
        (await s.eventLog("run_1", 0, 10)).map((e) => e.sourceSeq),
        [1, 2, 3, 4, 5],
      );
      await s.close();
    });

    it("a batch without host callbacks: each item on its run as the earlier items left it, the window trimmed to 64 within the batch, as if committed one at a time", async () => {
      const items = (conn1: string, conn2: string): BatchedEvent[] => [
        ...Array.from({ length: 70 }, (_, i) => ({ runId: "run_1", connectionId: conn1, event: row(i + 1) })),
        { runId: "run_1", connectionId: conn1, event: row(71, { sourceEventId: row(7).sourceEventId }) }, // the oldest still in the window (71 - 1 - 64 < 7)
        { runId: "run_1", connectionId: conn1, event: row(71, { sourceEventId: row(6).sourceEventId }) }, // the newest that has left it
        { runId: "run_2", connectionId: conn2, event: row(1, {}, 2) },
        { runId: "run_2", connectionId: conn2, event: row(2, { eventType: "run.terminal" }, 2) },
        { runId: "run_2", connectionId: conn2, event: row(3, {}, 2) },
        { runId: "run_9", connectionId: conn1, event: row(1) },
        { runId: "run_1", connectionId: "connection_9", event: row(72) },
        { runId: "run_1", connectionId: conn1, event: row(73) },
      ];
      const expected = [
        ...Array.from({ length: 70 }, (_, i) => i + 1),
        "duplicate_mismatch",
        71,
        1,
        2,
        "event_after_terminal",
        "unknown_run",
        "connection_superseded",
        "sequence_gap",
      ];
      const outcomes = async (
        commit: (s: AuthorityStore, batch: BatchedEvent[]) => Promise<Array<Result<{ ackedSourceSeq: number }>>>,
      ) => {
        const { o, a, conn } = await connected();
        await withRun(a, 2);
        const conn2 = (await connect(a, "run_2")).connectionId;
        const results = (await commit(o.store, items(conn, conn2))).map((r) =>
          r.ok ? r.value.ackedSourceSeq : r.error.code,
        );
        const state = {
          log: (await o.store.eventLog("run_1", 0, 100)).map((e) => [e.sourceSeq, e.sourceEventId]),
          window: (await o.store.committedWindow("run_1")).map((e) => [e.sourceSeq, e.sourceEventId]),
          run2: (await o.store.committedWindow("run_2")).map((e) => e.sourceSeq),
          cursors: [await o.store.runCursor("run_1"), await o.store.runCursor("run_2")].map((c) => [
            c!.ackedSourceSeq,
            c!.terminalSourceSeq,
          ]),
        };
        await o.store.close();
        return { results, state };
      };
      const batched = await outcomes((s, batch) => s.commitEvents(batch, 1));
      assert.deepEqual(batched.results, expected);
      assert.deepEqual(
        batched.state.log.map(([seq]) => seq),
        Array.from({ length: 71 }, (_, i) => i + 1),
      );
      assert.deepEqual(batched.state.log.at(-1), [71, row(6).sourceEventId]);
      assert.deepEqual(
        batched.state.window.map(([seq]) => seq),
        Array.from({ length: COMMITTED_WINDOW }, (_, i) => 71 - COMMITTED_WINDOW + 1 + i),
      );
      assert.deepEqual(batched.state.run2, [1, 2]);
      assert.deepEqual(batched.state.cursors, [
        [71, null],
        [2, 2],
      ]);
      const oneByOne = await outcomes(async (s, batch) => {
        const results: Array<Result<{ ackedSourceSeq: number }>> = [];
        for (const item of batch) results.push(await s.commitEvent(item.runId, item.connectionId, item.event, 1));
        return results;
      });
      assert.deepEqual(oneByOne, batched, "one transaction per event ends the same");
    });

    it("a committed run.terminal is final: nothing commits after it, and runCursor names it", async () => {
      const { o, conn } = await connected();
      const s = o.store;
      unwrap(await s.commitEvent("run_1", conn, row(1), 1));
      unwrap(await s.commitEvent("run_1", conn, row(2, { eventType: "run.terminal" }), 2));
      assert.equal(codeOf(await s.commitEvent("run_1", conn, row(3), 3)), "event_after_terminal");
      assert.equal((await s.runCursor("run_1"))!.terminalSourceSeq, 2);
      assert.equal((await s.run("run_1"))!.terminalSourceSeq, 2);
      await s.close();
    });

    it("appendCommand takes the next controllerSeq once; deliverNextCommand hands out the lowest pending; results are kept and repeats counted", async () => {
      const { o, conn } = await connected();
      const s = o.store;
      assert.equal(codeOf(await s.appendCommand("run_1", command(2), 1)), "controller_seq_moved");
      assert.equal(codeOf(await s.appendCommand("run_9", command(1), 1)), "unknown_run");
      unwrap(await s.appendCommand("run_1", command(1), 1));
      assert.equal(
        codeOf(await s.appendCommand("run_1", command(2, { commandId: "command_1" }), 1)),
        "command_conflict",
      );
      unwrap(await s.appendCommand("run_1", command(2), 1));
      assert.equal(
        codeOf(
          await s.recordCommandResult("run_1", conn, { commandId: "command_1", status: "completed", result: "{}" }, 2),
        ),
        "command_not_delivered",
      );
      const first = unwrap(await s.deliverNextCommand("run_1", conn, false, 3));
      assert.deepEqual(
        [first?.commandId, first?.deliveryCount, first?.lastDeliveredConnectionId],
        ["command_1", 1, conn],
      );
      assert.equal(unwrap(await s.deliverNextCommand("run_1", conn, false, 4)), null, "in flight: not sent again");
      assert.equal(
        unwrap(await s.deliverNextCommand("run_1", conn, true, 4))?.deliveryCount,
        2,
        "repeat sends it again",
      );
      assert.equal(codeOf(await s.deliverNextCommand("run_1", "connection_9", false, 4)), "connection_superseded");
      const done = unwrap(
        await s.recordCommandResult(
          "run_1",
          conn,
          { commandId: "command_1", status: "completed", result: '{"ok":1}' },
          5,
        ),
      );
      assert.deepEqual([done.duplicate, done.command.status, done.command.result], [false, "completed", '{"ok":1}']);
      assert.equal(
        unwrap(
          await s.recordCommandResult(
            "run_1",
            conn,
            { commandId: "command_1", status: "completed", result: '{"ok":1}' },
            6,
          ),
        ).duplicate,
        true,
      );
      assert.equal(
        codeOf(
          await s.recordCommandResult(
            "run_1",
            conn,
            { commandId: "command_1", status: "failed", result: '{"ok":0}' },
            6,
          ),
        ),
        "command_result_mismatch",
      );
      assert.equal(
        codeOf(
          await s.recordCommandResult("run_1", conn, { commandId: "command_9", status: "failed", result: "{}" }, 6),
        ),
        "unknown_command",
      );
      assert.equal(unwrap(await s.deliverNextCommand("run_1", conn, false, 7))?.commandId, "command_2");
      const run = (await s.run("run_1"))!;
      assert.deepEqual(
        [run.commandCount, run.commandDeliveryCounts, run.duplicateCommandResults],
        [2, { command_1: 2, command_2: 1 }, 1],
      );
      assert.deepEqual(
        (await s.commands("run_1")).map((c) => [c.controllerSeq, c.status]),
        [
          [1, "completed"],
          [2, null],
        ],
      );
      assert.equal((await s.command("run_1", "command_2"))?.type, "turn.start");
      assert.equal(await s.command("run_1", "command_9"), undefined);
      await s.close();
    });

    it("liveRunWork: each known run's epoch, and whether its lowest unanswered command waits for the current connection", async () => {
      const { o, a, conn } = await connected();
      const s = o.store;
      await withRun(a, 2);
      const work = async (...ids: string[]) =>
        (await s.liveRunWork(ids))
          .sort((x, y) => x.runId.localeCompare(y.runId))
          .map((w) => [w.runId, w.revocationEpoch, w.commandWaiting]);
      assert.deepEqual(await work(), []);
      assert.deepEqual(await work("run_1", "run_2", "run_9"), [
        ["run_1", 0, false],
        ["run_2", 0, false],
      ]);
      unwrap(await s.appendCommand("run_1", command(1), 1));
      assert.deepEqual(await work("run_1"), [["run_1", 0, true]], "queued, never sent");
      unwrap(await s.deliverNextCommand("run_1", conn, false, 2));
      assert.deepEqual(await work("run_1"), [["run_1", 0, false]], "sent on the current connection");
      const next = (await connect(a)).connectionId;
      assert.deepEqual(await work("run_1"), [["run_1", 0, true]], "sent on a connection since replaced");
      unwrap(await s.deliverNextCommand("run_1", next, false, 3));
      unwrap(
        await s.recordCommandResult("run_1", next, { commandId: "command_1", status: "completed", result: "{}" }, 4),
      );
      assert.deepEqual(await work("run_1"), [["run_1", 0, false]], "answered");
      unwrap(await s.appendCommand("run_1", command(2), 5));
      unwrap(await s.revoke("run_1", undefined, 6));
      // Thousands of ids in one call: the unknown ones are left out, the known run is found.
      const many = Array.from({ length: 3000 }, (_, i) => `run_x${i}`);
      assert.deepEqual(await work(...many, "run_1"), [["run_1", 1, true]], "the lowest unanswered is the next one");
      await s.close();
    });

    it("revoke raises the epoch (by one, or to a greater one), revokes live credentials of lower epochs, and refuses a lower epoch", async () => {
      const { o, a, conn } = await connected();
      const s = o.store;
      const unused = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
      const lease = (await s.run("run_1"))!.lastLeaseId!;
      const revoked = unwrap(await s.revoke("run_1", undefined, a.clock.now()));
      assert.deepEqual(
        revoked,
        { revocationEpoch: 1, revokedCredentials: 2 },
        "the lease and the unused ticket; the used ticket stays used",
      );
      assert.notEqual((await s.credential(unused.credentialId))!.revokedAtUnixMs, null);
      assert.equal(codeOf(await s.revoke("run_1", 1, a.clock.now())), "revocation_epoch_not_greater");
      assert.equal(unwrap(await s.revoke("run_1", 5, a.clock.now())).revocationEpoch, 5);
      assert.equal(codeOf(await s.revoke("run_9", undefined, 0)), "unknown_run");
      assert.equal((await s.runCursor("run_1"))!.revocationEpoch, 5);
      assert.equal(
        codeOf(
          await renewOne(s, {
            runId: "run_1",
            connectionId: conn,
            leaseId: lease,
            observedExpiresAtUnixMs: 0,
            revocationEpoch: 5,
            ttlMs: 60_000,
            nowMs: a.clock.now(),
          }),
        ),
        "credential_revoked",
      );
      const fresh = await connect(a);
      assert.equal(fresh.connectionLeaseRevocationEpoch, 5, "a new ticket works under the new epoch");
      await s.close();
    });

    it("reauthorize re-reads the credential: a changed, used, expired or revoked one is refused, and each admission is a new current connection", async () => {
      const { o, a } = await connected();
      const s = o.store;
      const ticket = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
      const row1 = (await s.credential(ticket.credentialId))!;
      const mint = {
        credentialId: `sha256:${"a".repeat(64)}`,
        authKeyDigest: `sha256:${"b".repeat(64)}`,
        leaseId: "lease_x",
        expiresAtUnixMs: a.clock.now() + 60_000,
      };
      assert.equal(
        codeOf(
          await s.reauthorize({
            expected: { ...row1, expiresAtUnixMs: row1.expiresAtUnixMs + 1 },
            selectedVersion: 3,
            mint,
            nowMs: a.clock.now(),
          }),
        ),
        "credential_changed",
      );
      assert.equal(
        codeOf(await s.reauthorize({ expected: row1, selectedVersion: 3, mint, nowMs: row1.expiresAtUnixMs })),
        "credential_expired",
      );
      assert.equal(
        codeOf(await s.reauthorize({ expected: row1, selectedVersion: 3, mint: null, nowMs: a.clock.now() })),
        "credential_kind_mismatch",
      );
      const admitted = unwrap(await s.reauthorize({ expected: row1, selectedVersion: 3, mint, nowMs: a.clock.now() }));
      assert.deepEqual(
        [admitted.connectionId, admitted.freshBootstrap, admitted.lease.leaseId],
        ["connection_2", true, "lease_x"],
      );
      assert.equal(
        codeOf(await s.reauthorize({ expected: row1, selectedVersion: 3, mint, nowMs: a.clock.now() })),
        "credential_changed",
        "it is used now",
      );
      assert.equal(
        codeOf(await s.reauthorize({ expected: admitted.lease, selectedVersion: 2, mint: null, nowMs: a.clock.now() })),
        "version_mismatch",
      );
      const runner = {
        runnerVersion: "9.9.9",
        runnerDigest: `sha256:${"c".repeat(64)}`,
        contractDigest: `sha256:${"d".repeat(64)}`,
      };
      const again = unwrap(
        await s.reauthorize({ expected: admitted.lease, selectedVersion: 3, mint: null, nowMs: a.clock.now(), runner }),
      );
      assert.deepEqual([again.connectionId, again.freshBootstrap], ["connection_3", false]);
      const run = (await s.run("run_1"))!;
      assert.deepEqual(
        [run.currentConnectionId, run.connectionCount, run.freshBootstraps, run.lastLeaseId],
        ["connection_3", 3, 2, "lease_x"],
      );
      // Each admission is recorded with the build its runner reported; the refusals above are not.
      const recorded = await s.runnerConnections("run_1");
      assert.deepEqual(
        recorded.map((c) => [c.connectionId, c.protocolVersion, c.contractDigest]),
        [
          ["connection_1", 3, null],
          ["connection_2", 3, null],
          ["connection_3", 3, runner.contractDigest],
        ],
      );
      assert.deepEqual(recorded[2], {
        connectionId: "connection_3",
        connectedAt: a.clock.now(),
        protocolVersion: 3,
        ...runner,
      });
      await s.close();
    });

    it("runnerConnections keeps the newest MAX_RUNNER_CONNECTIONS of a run, oldest first", async () => {
      const { o, a } = await connected();
      const s = o.store;
      const ticket = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
      const mint = {
        credentialId: `sha256:${"a".repeat(64)}`,
        authKeyDigest: `sha256:${"b".repeat(64)}`,
        leaseId: "lease_x",
        expiresAtUnixMs: a.clock.now() + 60_000,
      };
      const { lease } = unwrap(
        await s.reauthorize({
          expected: (await s.credential(ticket.credentialId))!,
          selectedVersion: 3,
          mint,
          nowMs: a.clock.now(),
        }),
      );
      for (let i = 0; i < MAX_RUNNER_CONNECTIONS; i++)
        unwrap(await s.reauthorize({ expected: lease, selectedVersion: 3, mint: null, nowMs: a.clock.now() }));
      const recorded = await s.runnerConnections("run_1");
      // connection_1 (connected), connection_2 (the ticket), then MAX_RUNNER_CONNECTIONS more on the lease.
      const last = MAX_RUNNER_CONNECTIONS + 2;
      assert.deepEqual(
        recorded.map((c) => c.connectionId),
        Array.from({ length: MAX_RUNNER_CONNECTIONS }, (_, i) => `connection_${last - MAX_RUNNER_CONNECTIONS + 1 + i}`),
      );
      assert.deepEqual(await s.runnerConnections("run_9"), []);
      await s.close();
    });

    /** A connected run_1 and a renewal of its lease, 1 s on, for 120 s. */
    async function renewalOfConnected() {
      const { o, a, conn } = await connected();
      const s = o.store;
      const run = (await s.run("run_1"))!;
      const req: RenewLeaseRequest = {
        runId: "run_1",
        connectionId: conn,
        leaseId: run.lastLeaseId!,
        observedExpiresAtUnixMs: run.lastLeaseExpiresAtUnixMs!,
        revocationEpoch: 0,
        ttlMs: 120_000,
        nowMs: a.clock.now() + 1000,
      };
      return { s, req };
    }

    it("renewLeases answers each renewal of a group on its own, in the order given", async () => {
      const { s, req } = await renewalOfConnected();
      const [refused, renewed, unknown, retried] = await s.renewLeases([
        { ...req, leaseId: "lease_nobody" },
        req,
        { ...req, runId: "run_0" },
        req,
      ]);
      assert.equal(codeOf(refused!), "lease_renewal_refused");
      assert.equal(unwrap(renewed!).expiresAtUnixMs, req.nowMs + 120_000, "a refusal before it does not undo it");
      assert.equal(codeOf(unknown!), "unknown_run");
      assert.deepEqual(
        unwrap(retried!),
        { ...unwrap(renewed!), replayed: true },
        "the same renewal again in the group",
      );
      assert.equal((await s.run("run_1"))!.lastLeaseExpiresAtUnixMs, req.nowMs + 120_000);
      assert.deepEqual(await s.renewLeases([]), []);
      await s.close();
    });

    it("renewLease extends once, replays a retry, and refuses another connection, an unknown observed expiry or an expired lease", async () => {
      const { s, req } = await renewalOfConnected();
      const renewed = unwrap(await renewOne(s, req));
      assert.deepEqual(renewed, {
        previousExpiresAtUnixMs: req.observedExpiresAtUnixMs,
        expiresAtUnixMs: req.nowMs + 120_000,
        revocationEpoch: 0,
        replayed: false,
      });
      assert.deepEqual(
        unwrap(await renewOne(s, { ...req, nowMs: req.nowMs + 5 })),
        { ...renewed, replayed: true },
        "a retry gets the persisted extension back",
      );
      assert.equal((await s.run("run_1"))!.lastLeaseExpiresAtUnixMs, renewed.expiresAtUnixMs);
      assert.equal(codeOf(await renewOne(s, { ...req, observedExpiresAtUnixMs: 7 })), "lease_renewal_refused");
      assert.equal(codeOf(await renewOne(s, { ...req, connectionId: "connection_9" })), "connection_superseded");
      assert.equal(codeOf(await renewOne(s, { ...req, leaseId: "lease_nobody" })), "lease_renewal_refused");
      assert.equal(codeOf(await renewOne(s, { ...req, revocationEpoch: 1 })), "lease_renewal_refused");
      assert.equal(
        codeOf(
          await renewOne(s, {
            ...req,
            observedExpiresAtUnixMs: renewed.expiresAtUnixMs,
            nowMs: renewed.expiresAtUnixMs,
          }),
        ),
        "credential_expired",
      );
      assert.equal(codeOf(await renewOne(s, { ...req, runId: "run_9" })), "unknown_run");
      await s.close();
    });

    it("prune deletes used, revoked and expired credentials and keeps the live ones", async () => {
      const { o, a } = await connected(); // one used ticket, one live lease
      const s = o.store;
      const ticket = (n: string, expiresAtUnixMs: number) => ({
        runId: "run_1",
        credentialId: `sha256:${n.repeat(64)}`,
        authKeyDigest: `sha256:${"c".repeat(64)}`,
        issuedAtUnixMs: a.clock.now(),
        expiresAtUnixMs,
      });
      unwrap(await s.insertTicket(ticket("a", a.clock.now() + 10_000)));
      unwrap(await s.insertTicket(ticket("b", a.clock.now() + 1_000)));
      assert.equal(codeOf(await s.insertTicket({ ...ticket("d", 1), runId: "run_9" })), "unknown_run");
      const lease = (await s.run("run_1"))!.lastLeaseId;
      assert.equal(await s.prune(a.clock.now() + 2_000), 2, "the used ticket and the expired one");
      assert.ok(await s.credential(ticket("a", 0).credentialId));
      assert.equal(await s.credential(ticket("b", 0).credentialId), undefined);
      assert.equal(await s.prune(a.clock.now() + 2_000), 0);
      assert.equal(await s.prune(a.clock.now() + 60_000), 2, "the live ticket and the lease, once expired");
      assert.ok(lease);
      await s.close();
    });

    it("keeps the newest 32 diagnostics, counts malformed frames, and records nothing for an unknown run", async () => {
      const o = await factory.open();
      const s = o.store;
      unwrap(await s.registerRun(identity(1), { protocolVersion: 3, nowMs: 0 }));
      for (let i = 1; i <= MAX_DIAGNOSTICS + 3; i++)
        await s.recordDiagnostic("run_1", { code: "c", message: `m${i}` }, i);
      await s.recordMalformedFrame("run_1", { code: "invalid_json", message: "frame\0 x" }, 99);
      await s.recordDiagnostic("run_9", { code: "c", message: "nobody" }, 1);
      await s.recordMalformedFrame("run_9", { code: "c", message: "nobody" }, 1);
      const kept = await s.diagnostics("run_1");
      assert.equal(kept.length, MAX_DIAGNOSTICS);
      assert.equal(kept[0]!.message, "m5");
      assert.equal(kept.at(-1)!.code, "invalid_json");
      assert.equal((await s.run("run_1"))!.malformedFrames, 1);
      assert.deepEqual(await s.diagnostics("run_9"), []);
      await s.close();
    });

    it("counts refusals before authentication per code, keeping their first and latest apart from the 32", async () => {
      const o = await factory.open();
      const s = o.store;
      unwrap(await s.registerRun(identity(1), { protocolVersion: 3, nowMs: 0 }));
      for (let i = 1; i <= 5; i++)
        await s.recordAuthFailure("run_1", { code: "proof_mismatch", message: `attempt ${i}` }, i);
      await s.recordAuthFailure("run_1", { code: "unknown_credential", message: "a single refusal" }, 6);
      for (let i = 0; i < MAX_DIAGNOSTICS + 2; i++)
        await s.recordDiagnostic("run_1", { code: "other", message: `o${i}` }, 10 + i);
      await s.recordAuthFailure("run_9", { code: "proof_mismatch", message: "nobody" }, 1);
      assert.deepEqual(await s.authFailures("run_1"), { proof_mismatch: 5, unknown_credential: 1 });
      assert.deepEqual(await s.authFailures("run_9"), {});
      const messages = (await s.diagnostics("run_1")).map((d) => d.message);
      for (const m of ["attempt 1", "attempt 5", "a single refusal"]) assert.ok(messages.includes(m), m);
      assert.ok(!messages.includes("attempt 3"));
      assert.equal(messages.filter((m) => m.startsWith("o")).length, MAX_DIAGNOSTICS);
      await s.close();
    });

    it("stores credentials sealed: the database alone does not hold an auth key, and another server key is refused unless adopted", async () => {
      const { o, a } = await connected();
      const ticket = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
      const digest = (await o.store.credential(ticket.credentialId))!.authKeyDigest;
      const stored = await o.rawAuthKeys();
      assert.equal(stored.length, 2, "the lease and the new ticket (issuing it pruned the used one)");
      for (const value of stored) {
        assert.ok(value.startsWith("sealed:"), value);
        assert.ok(!value.includes(digest.slice("sha256:".length)), "not the key itself");
      }
      await o.store.close();
      const other = ServerKey.generate();
      await assert.rejects(
        o.reopen({ serverKey: other }),
        (err: Error & { code?: string }) => err.code === "state_server_key_mismatch",
      );
      const same = await o.reopen({ serverKey });
      assert.equal((await same.credential(ticket.credentialId))!.authKeyDigest, digest, "the right key opens it");
      await same.close();
      const adopted = await o.reopen({ serverKey: other, adoptServerKey: true });
      assert.equal(await adopted.credential(ticket.credentialId), undefined, "adopting a key deletes every credential");
      await adopted.close();
    });

    it("keeps everything across a reopen: cursor, log, window, commands, counters", async () => {
      const { o, conn } = await connected();
      for (let seq = 1; seq <= 3; seq++) unwrap(await o.store.commitEvent("run_1", conn, row(seq), seq));
      unwrap(await o.store.appendCommand("run_1", command(1), 1));
      const before = await o.store.run("run_1");
      await o.store.close();
      const s = await o.reopen();
      assert.deepEqual(await s.run("run_1"), before);
      assert.deepEqual(
        (await s.eventLog("run_1", 0, 10)).map((e) => e.sourceSeq),
        [1, 2, 3],
      );
      assert.equal((await s.committedWindow("run_1")).length, 3);
      unwrap(await s.commitEvent("run_1", conn, row(4), 4));
      await s.close();
    });
  });
}
