import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import type { HarnessDriver, HarnessFact, HarnessListener } from "../../src/harness/harness-driver.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { STATE_FILE } from "../../src/runner/durable/runner-state.js";
import { durableRunner, SecureAuthority, until } from "../security/support.js";

/** The fake harness, with its `ready` held back until the test lets it through. */
class HeldReadyDriver implements HarnessDriver {
  readonly kind = "held-fake";
  private readonly inner = new FakeHarnessDriver({ scriptPath: resolveScriptPath("happy-path"), delayMs: 0 });
  readonly command = this.inner.command;
  private held: Array<() => void> = [];
  heldReady = false;

  start(listener: HarnessListener): void {
    this.inner.start({
      fact: (fact: HarnessFact) => {
        if (fact.kind !== "ready") return listener.fact(fact);
        this.heldReady = true;
        this.held.push(() => listener.fact(fact));
      },
      gone: (gone) => listener.gone(gone),
    });
  }
  release(): void {
    for (const deliver of this.held.splice(0)) deliver();
  }
  openSession = (o: Parameters<HarnessDriver["openSession"]>[0]) => this.inner.openSession(o);
  startTurn = (t: Parameters<HarnessDriver["startTurn"]>[0]) => this.inner.startTurn(t);
  interrupt = (r: string) => this.inner.interrupt(r);
  resolveRequest = (id: string, r: Record<string, unknown>) => this.inner.resolveRequest(id, r);
  stop = () => this.inner.stop();
  pause = () => this.inner.pause();
  resume = () => this.inner.resume();
}

/** The runner's acknowledged cursor as its state file says, read apart from the runner. */
function ackedOnDisk(stateDir: string): number {
  const db = new Database(join(stateDir, STATE_FILE), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("SELECT acked_source_seq AS a FROM runner_state WHERE id = 1").get() as { a: number }).a;
  } finally {
    db.close();
  }
}

describe("commands run apart from the envelope pump (a command's effect never holds back ACKs)", () => {
  let authority: SecureAuthority;
  before(async () => {
    authority = await SecureAuthority.start();
  });
  after(() => authority.close());

  it("applies ACKs while run.prepare waits for the harness, and a reconnect mid-command neither loops nor runs it twice", async () => {
    const identity = await authority.newRun();
    const driver = new HeldReadyDriver();
    const { runner, stateDir } = await durableRunner(authority, identity, { driver, reconnectDelayMs: 10 });
    const outcome = runner.run();
    await until(() => driver.heldReady, "the harness said ready (held back by the test)");
    // run.prepare is under way: its three events are committed and their ACKs applied by the
    // runner, as its state file shows, although the command has not finished.
    await until(
      () => ackedOnDisk(stateDir) === 3,
      () => `the runner applied the ACK of its 3 events (on disk: ${ackedOnDisk(stateDir)})`,
    );
    const prepare = (await authority.server.commands.commands(identity.runId))[0]!;
    assert.equal(prepare.status, null, "run.prepare has no result yet");

    authority.server.disconnectRunner(identity.runId);
    await until(
      async () => (await authority.snapshot(identity.runId)).commandDeliveryCounts[prepare.commandId] === 2,
      "run.prepare redelivered on the new connection",
    );
    // A runner that answered the redelivery with its journal's `pending` would be refused and
    // redial every 10 ms; give such a loop room to show before the command finishes.
    await until(async () => (await authority.snapshot(identity.runId)).connectionCount > 2, "", 300).catch(() => {});
    assert.equal(
      (await authority.snapshot(identity.runId)).connectionCount,
      2,
      "no reconnect loop while the command runs",
    );
    driver.release();

    assert.deepEqual(await outcome, { code: 0, reason: "run_delivered" });
    const events = authority.committed.get(identity.runId) ?? [];
    assert.equal(events.filter((e) => e.eventType === "workspace.ready").length, 1, "run.prepare took effect once");
    assert.equal(events.filter((e) => e.eventType === "harness.starting").length, 1);
    assert.equal(events.at(-1)?.eventType, "run.terminal");
    // The last result may still be on its way into the store when the runner's outcome settles:
    // the runner sends it before closing, the authority writes it when it reads it.
    const statuses = async () => (await authority.server.commands.commands(identity.runId)).map((c) => c.status);
    // If one never arrives, the assertion below names the statuses.
    await until(async () => !(await statuses()).includes(null), "every command's result stored").catch(() => {});
    const commands = await authority.server.commands.commands(identity.runId);
    assert.deepEqual(
      commands.map((c) => c.status),
      ["completed", "completed", "completed"],
    );
    assert.equal((await authority.snapshot(identity.runId)).connectionCount, 2);
  });
});
