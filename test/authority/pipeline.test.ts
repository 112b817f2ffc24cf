import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import type { OnCommittedEvent } from "../../src/authority/ingest.js";
import type { BatchedEvent } from "../../src/authority/store.js";
import type { RunIdentity } from "../../src/authority/identity.js";
import { HandRunner, SecureAuthority } from "../security/support.js";
import { within } from "../support/within.js";
import { committedThrough, once, recording, served, type Entry, type Fault } from "./commit-records.js";
import { tempRoot } from "./support.js";

/**
 * A connection's events are pipelined: the next ones are accepted while the earlier
 * ones commit. The rules it must keep, judged from records apart from ingest's own word: the
 * store's completed commits (a wrapper logs them), the ACK frames the runner receives off the
 * wire, and the run log read through a second database connection, which sees only committed rows.
 *   - an ACK of n comes after the commit of every event ≤ n of its run;
 *   - each run's events commit in sourceSeq order, each once;
 *   - a rolled-back commit (a store fault, a failing host) ACKs nothing at or after it; the
 *     runner resends from its last ACK, and the run log ends with every event once.
 */

/** Judge: the ACKs of (run, n) sent before every event ≤ n of that run had committed. */
function acksBeforeCommit(entries: readonly Entry[]): Entry[] {
  const through = new Map<string, number>();
  const early: Entry[] = [];
  for (const e of entries) {
    const held = through.get(e.runId) ?? 0;
    if (e.kind === "commit") {
      if (e.seq === held + 1) through.set(e.runId, e.seq);
    } else if (e.seq > held) early.push(e);
  }
  return early;
}

/** Judge: commits that are not their run's next sourceSeq (out of order, repeated or skipped). */
function commitOrderFaults(entries: readonly Entry[]): Entry[] {
  const through = new Map<string, number>();
  const faults: Entry[] = [];
  for (const e of entries.filter((x) => x.kind === "commit")) {
    if (e.seq !== (through.get(e.runId) ?? 0) + 1) faults.push(e);
    through.set(e.runId, Math.max(e.seq, through.get(e.runId) ?? 0));
  }
  return faults;
}

/** Judge: what the run log holds against 1..count, each once and in order. */
function logFaults(seqs: readonly number[], count: number): string[] {
  const faults: string[] = [];
  seqs.forEach((seq, i) => seq !== i + 1 && faults.push(`row ${i} holds sourceSeq ${seq}`));
  if (seqs.length !== count) faults.push(`${seqs.length} rows, not ${count}`);
  return faults;
}

/** Judge: ACK frames of one connection that move backward. */
function backwardAcks(acks: readonly number[]): number[] {
  return acks.filter((seq, i) => i > 0 && seq < acks[i - 1]!);
}

const runLog = (reader: Database.Database, runId: string): number[] =>
  (
    reader.prepare("SELECT source_seq FROM event_log WHERE run_id = ? ORDER BY rowid").all(runId) as Array<{
      source_seq: number;
    }>
  ).map((r) => r.source_seq);

interface Connection {
  acks: number[];
  /** ACKs the database did not yet hold when they arrived. */
  ahead: string[];
  close: { code: number; reason: string };
}

/**
 * One connection of a hand runner that sends every event from the welcome's cursor to `count`
 * at once, then reads ACKs until `count` or the close. Each ACK is logged and checked against
 * the database at the moment it arrives.
 */
async function connection(
  authority: SecureAuthority,
  run: RunIdentity,
  count: number,
  log: Entry[],
  reader: Database.Database,
): Promise<Connection> {
  const runner = await HandRunner.dial(authority.url(run.runId), run);
  const acks: number[] = [];
  const ahead: string[] = [];
  try {
    const session = await runner.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId) });
    for (let seq = session.welcome.ackedSourceSeq + 1; seq <= count; seq++) runner.sendEvent(seq);
    let acked = session.welcome.ackedSourceSeq;
    while (acked < count) {
      const envelope = await within(
        Promise.race([runner.receive(), runner.closed().then(() => null)]),
        20_000,
        `ACKs of ${run.runId}`,
      );
      if (envelope === null) break;
      if (envelope.kind !== "ack") continue;
      acked = envelope.payload.ackedSourceSeq as number;
      acks.push(acked);
      log.push({ kind: "ack", runId: run.runId, seq: acked });
      const held = committedThrough(reader, run.runId);
      if (held < acked) ahead.push(`${run.runId}: ACK ${acked}, database through ${held}`);
    }
  } finally {
    runner.close();
  }
  return { acks, ahead, close: await runner.closed() };
}

describe("pipelined ingest: ACK after commit, per-run order, nothing lost or repeated on a rollback", () => {
  const tmp = tempRoot("prp-pipeline-");
  after(() => tmp.cleanup());

  it("the judges fail on an early ACK, an out-of-order or repeated commit, a lost or repeated row and a backward ACK", () => {
    const c = (seq: number, runId = "r"): Entry => ({ kind: "commit", runId, seq });
    const a = (seq: number, runId = "r"): Entry => ({ kind: "ack", runId, seq });
    assert.deepEqual(acksBeforeCommit([c(1), c(2), a(2), c(3), a(3)]), []);
    assert.deepEqual(acksBeforeCommit([c(1), a(2), c(2)]), [a(2)], "ACK 2 before commit 2");
    assert.deepEqual(acksBeforeCommit([c(2), a(2)]), [a(2)], "ACK 2 while event 1 never committed");
    assert.deepEqual(acksBeforeCommit([c(1, "x"), a(1, "y")]), [a(1, "y")], "another run's commit does not count");
    assert.deepEqual(commitOrderFaults([c(1), c(2), c(1, "x"), c(3)]), []);
    assert.deepEqual(commitOrderFaults([c(2), c(1)]), [c(2), c(1)], "out of order");
    assert.deepEqual(commitOrderFaults([c(1), c(1)]), [c(1)], "repeated");
    assert.deepEqual(logFaults([1, 2, 3], 3), []);
    assert.deepEqual(logFaults([1, 3], 3), ["row 1 holds sourceSeq 3", "2 rows, not 3"], "lost");
    assert.deepEqual(
      logFaults([1, 2, 2, 3], 3),
      ["row 2 holds sourceSeq 2", "row 3 holds sourceSeq 3", "4 rows, not 3"],
      "repeated",
    );
    assert.deepEqual(backwardAcks([1, 3, 3, 7]), []);
    assert.deepEqual(backwardAcks([1, 3, 2]), [2]);
  });

  it("runners sending 60 events at once: ACKs after their commits and in order, each run in order, several of a run's events in one transaction", async () => {
    const log: Entry[] = [];
    const batches: BatchedEvent[][] = [];
    const s = await served(tmp, (store) => recording(store, log, batches));
    try {
      const runs = await Promise.all([1, 2, 3, 4].map(() => s.authority.newRun()));
      const seen = await Promise.all(runs.map((run) => connection(s.authority, run, 60, log, s.reader)));
      for (const [i, c] of seen.entries()) {
        assert.equal(c.acks.at(-1), 60, `run ${i + 1} got its last ACK`);
        assert.deepEqual(backwardAcks(c.acks), [], "ACKs in order");
        assert.deepEqual(c.ahead, [], "no ACK before its commit (the database)");
      }
      assert.deepEqual(acksBeforeCommit(log), [], "no ACK before its commit (the store's record)");
      assert.deepEqual(commitOrderFaults(log), [], "each run's events commit in order, once");
      for (const run of runs)
        assert.deepEqual(logFaults(runLog(s.reader, run.runId), 60), [], `the run log of ${run.runId}`);
      const widest = Math.max(
        ...batches.map((b) => Math.max(...runs.map((r) => b.filter((i) => i.runId === r.runId).length))),
      );
      assert.ok(
        widest > 1,
        `a connection's next events join a commit while the earlier ones are under way (at most ${widest} of a run per transaction)`,
      );
    } finally {
      await s.close();
    }
  });

  it("a store fault under a pipelined batch: nothing at or after it is ACKed; the resent events commit once each, in order", async () => {
    const log: Entry[] = [];
    const batches: BatchedEvent[][] = [];
    let fault: Fault = () => null;
    const s = await served(tmp, (store) => recording(store, log, batches, (items) => fault(items)));
    try {
      const run = await s.authority.newRun();
      fault = once(run.runId, 9, "throw");
      const first = await connection(s.authority, run, 40, log, s.reader);
      assert.ok(
        batches.some((b) => b.some((i) => i.runId === run.runId && i.event.sourceSeq === 9)),
        "the fault's batch was reached",
      );
      assert.equal(first.close.reason, "store_unavailable", "the connection closed on the store's failure");
      assert.ok((first.acks.at(-1) ?? 0) < 9, `no ACK at or after the rolled-back event: ${first.acks.join(",")}`);
      assert.deepEqual(first.ahead, [], "no ACK before its commit (the database)");
      const second = await connection(s.authority, run, 40, log, s.reader);
      assert.equal(second.acks.at(-1), 40, "the resent events are acknowledged");
      assert.deepEqual(second.ahead, [], "no ACK before its commit (the database)");
      assert.deepEqual(acksBeforeCommit(log), [], "no ACK before its commit (the store's record)");
      assert.deepEqual(commitOrderFaults(log), [], "in order, once each");
      assert.deepEqual(logFaults(runLog(s.reader, run.runId), 40), [], "the run log: every event once");
    } finally {
      await s.close();
    }
  });

  it("a host failing at event 7 while later events wait behind it: none of them is ACKed or committed; the retry commits each once", async () => {
    const log: Entry[] = [];
    const calls = new Map<number, number>();
    const failing: OnCommittedEvent = (_event, { sourceSeq }) => {
      calls.set(sourceSeq, (calls.get(sourceSeq) ?? 0) + 1);
      if (sourceSeq === 7 && calls.get(7) === 1) throw new Error("the ledger is locked");
    };
    const s = await served(tmp, (store) => recording(store, log, []), failing);
    try {
      const run = await s.authority.newRun();
      const first = await connection(s.authority, run, 30, log, s.reader);
      assert.equal(first.close.reason, "callback_failed");
      assert.ok((first.acks.at(-1) ?? 0) < 7, `no ACK at or after the failed event: ${first.acks.join(",")}`);
      assert.equal(committedThrough(s.reader, run.runId), 6, "the database holds 1..6 and nothing after the failure");
      const second = await connection(s.authority, run, 30, log, s.reader);
      assert.equal(second.acks.at(-1), 30);
      assert.deepEqual([...first.ahead, ...second.ahead], [], "no ACK before its commit (the database)");
      assert.deepEqual(acksBeforeCommit(log), []);
      assert.deepEqual(commitOrderFaults(log), []);
      assert.deepEqual(logFaults(runLog(s.reader, run.runId), 30), []);
      assert.equal(calls.get(7), 2, "the host saw event 7 fail, then commit");
      assert.deepEqual(
        (await s.authority.diagnostics(run.runId)).filter((d) => d.code !== "handler_failed").map((d) => d.code),
        [],
        "the events behind the failure left no refusal of their own",
      );
    } finally {
      await s.close();
    }
  });

  it("the judges catch a store that ACKs a batch it never wrote", async () => {
    const log: Entry[] = [];
    let fault: Fault = () => null;
    const s = await served(tmp, (store) => recording(store, log, [], (items) => fault(items)));
    try {
      const run = await s.authority.newRun();
      fault = once(run.runId, 3, "lose");
      const lossy = await connection(s.authority, run, 8, log, s.reader);
      assert.ok(
        lossy.acks.some((seq) => seq >= 3),
        `the broken store's ACK reached the runner: ${lossy.acks.join(",")}`,
      );
      assert.notDeepEqual(lossy.ahead, [], "the database shows the ACK ahead of it");
      assert.notDeepEqual(acksBeforeCommit(log), [], "the store's record shows it");
      assert.notDeepEqual(logFaults(runLog(s.reader, run.runId), 8), [], "the run log misses the lost events");
    } finally {
      await s.close();
    }
  });
});
