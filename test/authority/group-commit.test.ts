import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { ok } from "../../src/authority/errors.js";
import { EventIngest, type OnCommittedEvent } from "../../src/authority/ingest.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import type { AuthorityStore, BatchedEvent } from "../../src/authority/store.js";
import type { RunIdentity } from "../../src/authority/identity.js";
import { HandRunner, SecureAuthority, until } from "../security/support.js";
import { committedThrough, recording, served, withCommitEvents, type Entry } from "./commit-records.js";
import { authority, connect, event, serverKey, tempRoot, withRun } from "./support.js";

/**
 * Group commit and its rule: an ACK never precedes its commit. The proof is taken
 * from records apart from ingest's own word: the store's completed commits, logged by a
 * wrapper around it; the ACKs as the runner receives them off the wire; and at each ACK the
 * run log read through a second database connection, which sees only committed rows.
 */

/** The judge: every ACK of (run, n) after the completed commit of that run's event n. */
function acksBeforeCommit(entries: readonly Entry[]): Entry[] {
  const committed = new Set<string>();
  const early: Entry[] = [];
  for (const e of entries) {
    if (e.kind === "commit") committed.add(`${e.runId}#${e.seq}`);
    else if (!committed.has(`${e.runId}#${e.seq}`)) early.push(e);
  }
  return early;
}

/** A broken store: it answers every event as committed at once, and commits only when `gate` opens. */
function acknowledgingEarly(store: AuthorityStore, log: Entry[], gate: Promise<void>): AuthorityStore {
  const commitEvents = async (items: readonly BatchedEvent[], nowMs: number) => {
    void gate.then(() => recording(store, log, []).commitEvents(items, nowMs));
    return items.map((item) => ok({ ackedSourceSeq: item.event.sourceSeq }));
  };
  return withCommitEvents(store, commitEvents);
}

/** Runners on the wire, each sending events 1..count at once and tapping every ACK it receives. */
async function runnersSend(
  authority: SecureAuthority,
  runs: RunIdentity[],
  count: number,
  onAck: (runId: string, seq: number) => void,
): Promise<void> {
  await Promise.all(
    runs.map(async (run) => {
      const runner = await HandRunner.dial(authority.url(run.runId), run);
      try {
        await runner.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId) });
        for (let seq = 1; seq <= count; seq++) runner.sendEvent(seq);
        for (let acked = 0; acked < count;) {
          const envelope = await runner.receive();
          if (envelope.kind !== "ack") continue;
          acked = envelope.payload.ackedSourceSeq as number;
          onAck(run.runId, acked);
        }
      } finally {
        runner.close();
        await runner.closed();
      }
    }),
  );
}

describe("group commit: one transaction per tick for every connection, each ACK after its commit", () => {
  const tmp = tempRoot("prp-group-commit-");
  after(() => tmp.cleanup());

  it("concurrent events of several runs share one transaction; a failing host rolls back its own event only", async () => {
    const batches: BatchedEvent[][] = [];
    const failing: OnCommittedEvent = (_e, ctx) => {
      if (ctx.runId === "run_2") throw new Error("run 2's ledger is locked");
    };
    const a = authority("", {
      store: recording(SqliteAuthorityStore.open(tmp.dir(), { serverKey }), [], batches),
      onCommittedEvent: failing,
    });
    const connections: string[] = [];
    for (const n of [1, 2, 3]) {
      await withRun(a, n);
      connections.push((await connect(a, `run_${n}`)).connectionId);
    }
    const results = await Promise.all(
      [1, 2, 3].map((n, i) => a.ingest.ingest(`run_${n}`, connections[i]!, event(1, n))),
    );
    assert.deepEqual(
      results.map((r) => (r.ok ? r.value.ack.ackedSourceSeq : r.error.code)),
      [1, "callback_failed", 1],
    );
    assert.deepEqual(
      batches.map((b) => b.map((item) => item.runId)),
      [["run_1", "run_2", "run_3"]],
      "one transaction for the three events",
    );
    assert.deepEqual(
      await Promise.all([1, 2, 3].map(async (n) => (await a.store.runCursor(`run_${n}`))!.ackedSourceSeq)),
      [1, 0, 1],
    );
    await a.store.close();
  });

  it("afterCommit is told once per transaction, after it, of the runs it committed events to (not a refused one's)", async () => {
    const store = SqliteAuthorityStore.open(tmp.dir(), { serverKey });
    const a = authority("", { store });
    const connections: string[] = [];
    for (const n of [1, 2, 3]) {
      await withRun(a, n);
      connections.push((await connect(a, `run_${n}`)).connectionId);
    }
    const told: Array<{ runs: string[]; stored: number[] }> = [];
    const ingest = new EventIngest({
      store,
      now: a.clock.now,
      afterCommit: (runs) => {
        // Read back at once: what the notice names is already in the store for any reader.
        const ids = [...runs].sort();
        told.push({ runs: ids, stored: [] });
        void Promise.all(ids.map(async (r) => (await store.eventLog(r, 0, 10)).length)).then((n) =>
          told.at(-1)!.stored.push(...n),
        );
      },
    });
    const results = await Promise.all([
      ingest.ingest("run_1", connections[0]!, event(1, 1)),
      ingest.ingest("run_2", connections[1]!, event(2, 2)),
      ingest.ingest("run_3", connections[2]!, event(1, 3)),
    ]);
    assert.deepEqual(
      results.map((r) => (r.ok ? r.value.ack.ackedSourceSeq : r.error.code)),
      [1, "sequence_gap", 1],
    );
    await until(
      () => told.at(-1)?.stored.length === 2,
      () => `the read-back after the notice: ${JSON.stringify(told)}`,
    );
    assert.deepEqual(told, [{ runs: ["run_1", "run_3"], stored: [1, 1] }]);
    await store.close();
  });

  it("four runners on the wire: every ACK they receive is after its commit, by the store's record and by the database", async () => {
    const log: Entry[] = [];
    const batches: BatchedEvent[][] = [];
    const s = await served(tmp, (store) => recording(store, log, batches));
    try {
      const runs = await Promise.all([1, 2, 3, 4].map(() => s.authority.newRun()));
      const behind: string[] = [];
      await runnersSend(s.authority, runs, 20, (runId, seq) => {
        log.push({ kind: "ack", runId, seq });
        const held = committedThrough(s.reader, runId);
        if (held < seq) behind.push(`${runId}: ACK ${seq}, database through ${held}`);
      });
      assert.equal(log.filter((e) => e.kind === "ack").length > 0, true, "ACKs were received");
      assert.deepEqual(acksBeforeCommit(log), [], "no ACK before its commit (the store's record)");
      assert.deepEqual(behind, [], "no ACK before its commit (the database)");
      const events = batches.reduce((n, b) => n + b.length, 0);
      console.log(`group commit: ${events} events in ${batches.length} transactions`);
    } finally {
      await s.close();
    }
  });

  it("the judges catch an ingest that ACKs before committing", async () => {
    const log: Entry[] = [];
    let open = (): void => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const s = await served(tmp, (store) => acknowledgingEarly(store, log, gate));
    try {
      const runs = await Promise.all([1, 2, 3].map(() => s.authority.newRun()));
      const behind: string[] = [];
      await runnersSend(s.authority, runs, 1, (runId, seq) => {
        log.push({ kind: "ack", runId, seq });
        if (committedThrough(s.reader, runId) < seq) behind.push(runId);
      });
      assert.equal(acksBeforeCommit(log).length, 3, "the store's record shows every ACK early");
      assert.deepEqual(behind.sort(), runs.map((r) => r.runId).sort(), "the database shows every ACK early");
      open();
      await until(() => log.filter((e) => e.kind === "commit").length === 3, "the late commits");
      assert.equal(acksBeforeCommit(log).length, 3, "a commit after its ACK does not excuse it");
    } finally {
      open();
      await s.close();
    }
  });
});
