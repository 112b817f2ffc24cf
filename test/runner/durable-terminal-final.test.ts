import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { DurableRunner, type DurableOutcome } from "../../src/runner/durable/durable-runner.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import {
  DEFAULT_MAX_OUTBOX_BYTES,
  DEFAULT_P0_RESERVE_BYTES,
  RunnerState,
  STATE_FILE,
  type StateBinding,
} from "../../src/runner/durable/runner-state.js";
import { StateError } from "../../src/storage/private-sqlite.js";
import { BUILD, completeRun, prpEvent, SecureAuthority, until } from "../security/support.js";
import { within } from "../support/within.js";
import { buildCommand, defaultCommandId } from "../../src/authority/commands.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import { serverKey } from "../authority/support.js";

/** Writes a lifecycle into a runner's state file, as a later command of the same process would have. */
function setLifecycle(stateDir: string, lifecycle: string): void {
  const db = new Database(join(stateDir, STATE_FILE), { fileMustExist: true });
  try {
    db.prepare("UPDATE runner_state SET lifecycle = ? WHERE id = 1").run(lifecycle);
  } finally {
    db.close();
  }
}

/**
 * Issue 9, item 1, on the runner side: a replacement runner that finds its run's terminal
 * committed (here: sent and acknowledged, the outbox empty) delivers and stops. It never
 * reports runner.reconciled and a second terminal, whatever lifecycle the state records: a
 * drain or a revoke that arrived between the terminal's commit and its ACK leaves `draining`
 * or `revoked` over `stopped`.
 */
describe("a replacement runner finds the committed terminal and reconciles to it", () => {
  let authority: SecureAuthority;
  let store: SqliteAuthorityStore;
  const storeDir = mkdtempSync(join(tmpdir(), "prp-terminal-final-store-"));
  before(async () => {
    store = SqliteAuthorityStore.open(storeDir, { serverKey });
    authority = await SecureAuthority.start({ store });
  });
  after(async () => {
    await authority.close();
    await store.close();
    rmSync(storeDir, { recursive: true, force: true });
  });

  /**
   * A drain queued just before the terminal's commit and not yet delivered: the queue refuses one
   * after it (run_ended), so it is appended here as the queue would have appended it then.
   */
  async function drainQueuedBeforeTheEnd(runId: string): Promise<void> {
    const refused = await authority.server.queueCommand(runId, "runner.drain", {});
    assert.equal(refused.ok ? "queued" : refused.error.code, "run_ended");
    const run = (await store.run(runId))!;
    const controllerSeq = run.commandCount + 1;
    const built = buildCommand(
      { runId, protocolVersion: run.protocolVersion },
      {
        controllerSeq,
        commandId: defaultCommandId(controllerSeq),
        type: "runner.drain",
        payload: {},
        nowMs: Date.now(),
      },
    );
    assert.ok(built.ok);
    assert.ok((await store.appendCommand(runId, built.value, Date.now())).ok);
  }

  for (const lifecycle of ["stopped", "draining", "revoked", "ready"]) {
    it(`terminal acknowledged, lifecycle '${lifecycle}': the replacement, even cancelled, sends nothing, starts nothing, and exits delivered`, async () => {
      const identity = await authority.newRun();
      const first = await completeRun(authority, identity, await authority.ticket(identity.runId));
      assert.deepEqual(first.outcome, { code: 0, reason: "run_delivered" }, first.log.join("\n"));
      const committed = [...first.events];
      assert.equal(committed.at(-1)?.eventType, "run.terminal");
      const stateDir = join(authority.root, "runners", identity.runId);
      setLifecycle(stateDir, lifecycle);
      await drainQueuedBeforeTheEnd(identity.runId);

      let started = 0;
      const driver = new FakeHarnessDriver({ scriptPath: resolveScriptPath("happy-path"), delayMs: 0 });
      const start = driver.start.bind(driver);
      driver.start = (listener) => {
        started++;
        start(listener);
      };
      const log: string[] = [];
      const replacement = new DurableRunner({
        identity,
        connectUrl: authority.url(identity.runId),
        stateDir,
        bootstrapToken: await authority.ticket(identity.runId),
        runnerVersion: BUILD.version,
        runnerDigest: BUILD.digest,
        reconnectDelayMs: 50,
        driver,
        log: (text) => log.push(text),
      });
      replacement.cancel(); // a SIGTERM to the replacement: the run it would cancel is already over
      let outcome: DurableOutcome | undefined;
      void replacement.run().then((o) => (outcome = o));
      await until(
        () => outcome !== undefined,
        () => `the replacement ended (${log.length} log lines, the last: ${log.slice(-2).join(" | ")})`,
      );

      assert.deepEqual(outcome, { code: 0, reason: "run_delivered" });
      assert.deepEqual(
        authority.committed.get(identity.runId),
        committed,
        "the host's record is the first runner's: one terminal, last",
      );
      assert.deepEqual(
        (await authority.diagnostics(identity.runId)).filter((d) => d.code === "event_after_terminal"),
        [],
        "nothing was sent after the terminal",
      );
      assert.equal((await authority.snapshot(identity.runId)).ackedSourceSeq, committed.length);
      assert.equal(started, 0, "no harness was started");
    });
  }
});

describe("an outbox holding an event after the committed terminal (written by another build)", () => {
  let authority: SecureAuthority;
  before(async () => {
    authority = await SecureAuthority.start();
  });
  after(() => authority.close());

  it("is refused by the authority, and the runner stops, exit 5 refused_by_authority, on one connection instead of redialling", async () => {
    const identity = await authority.newRun();
    const first = await completeRun(authority, identity, await authority.ticket(identity.runId));
    assert.deepEqual(first.outcome, { code: 0, reason: "run_delivered" }, first.log.join("\n"));
    const stateDir = join(authority.root, "runners", identity.runId);
    const state = RunnerState.open(stateDir, {
      ...identity,
      maxOutboxBytes: DEFAULT_MAX_OUTBOX_BYTES,
      p0ReserveBytes: DEFAULT_P0_RESERVE_BYTES,
    });
    const after = state.admit(0, "runner.reconciled", (seq) =>
      JSON.stringify(
        prpEvent(identity, seq, {
          eventType: "runner.reconciled",
          priority: 0,
          payload: { outcome: "same_durable_session_resumed", harness: "lost" },
        }),
      ),
    );
    assert.ok(after.ok);
    state.close();
    const connectionsBefore = (await authority.snapshot(identity.runId)).connectionCount;
    const log: string[] = [];
    const replacement = new DurableRunner({
      identity,
      connectUrl: authority.url(identity.runId),
      stateDir,
      bootstrapToken: await authority.ticket(identity.runId),
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      reconnectDelayMs: 10,
      driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath("happy-path"), delayMs: 0 }),
      log: (text) => log.push(text),
    });
    const outcome = await within(replacement.run(), 30_000, "the runner stops instead of redialling");
    assert.equal(outcome.code, 5, log.join("\n"));
    assert.match("detail" in outcome ? outcome.detail : "", /^event_after_terminal: /);
    const run = await authority.snapshot(identity.runId);
    assert.equal(run.connectionCount, connectionsBefore + 1, "one connection: no redial storm");
    assert.equal(run.ackedSourceSeq, first.events.length, "nothing was committed after the terminal");
    assert.deepEqual(authority.committed.get(identity.runId), first.events);
  });
});

describe("the runner's state remembers its committed terminal apart from the outbox", () => {
  const binding: StateBinding = {
    runnerInstanceId: "runner_1",
    environmentLeaseId: "env_1",
    runId: "run_1",
    normalizedSessionId: "session_1",
    turnId: "turn_1",
    itemId: "item_1",
    maxOutboxBytes: 16 * 1024 * 1024,
    p0ReserveBytes: 1024 * 1024,
  };
  const envelope = (seq: number) => JSON.stringify({ sourceSeq: seq, payload: {} });
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "prp-terminal-state-"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("records the first terminal's sourceSeq in its own transaction, keeps it past the ACK and a reopen, and refuses a state whose record is past what was produced", () => {
    const dir = join(root, "a");
    const s = RunnerState.open(dir, binding);
    s.admit(1, "item.started", envelope);
    assert.equal(s.terminalSourceSeq(), null);
    s.admit(0, "run.terminal", envelope);
    assert.equal(s.terminalSourceSeq(), 2);
    assert.ok(s.applyAck(2).ok);
    assert.deepEqual(s.pending(), [], "the outbox forgot it");
    s.close();
    const again = RunnerState.open(dir, binding);
    assert.equal(again.terminalSourceSeq(), 2, "the state did not");
    again.close();
    const db = new Database(join(dir, STATE_FILE));
    db.prepare("UPDATE meta SET value = '3' WHERE key = 'terminal_source_seq'").run();
    db.close();
    assert.throws(
      () => RunnerState.open(dir, binding),
      (err: unknown) => err instanceof StateError && err.code === "state_terminal_invalid",
    );
  });
});
