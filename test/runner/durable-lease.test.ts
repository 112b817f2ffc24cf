import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import Database from "better-sqlite3";
import { DEFAULT_LEASE_TTL_MS, STORE_FILE } from "../../src/authority/limits.js";
import { AuthorityServer } from "../../src/authority/server.js";
import { ServerKey } from "../../src/authority/server-key.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { DurableRunner, type DurableOutcome } from "../../src/runner/durable/durable-runner.js";
import type { HeartbeatOptions, RunIdentity } from "../../src/transport/index.js";
import { BUILD, until } from "../security/support.js";
import { ManualTimers } from "../support/manual-timers.js";
import { within } from "../support/within.js";
import { STILL_HEARTBEAT } from "../transport/support.js";

const IDENTITY: RunIdentity = {
  runnerInstanceId: "runner_long",
  environmentLeaseId: "env_long",
  runId: "run_long",
  normalizedSessionId: "session_long",
  turnId: "turn_long",
  itemId: "item_long",
};
const ANSWER = {
  requestId: "request_question_1",
  resolution: {
    action: "submit",
    response: { schema: "paperclip.question_response.v1", answers: { strategy: { selectedOptionIds: ["online"] } } },
  },
};

/**
 * An authority and a durable runner in this process, both on one lease clock the test moves,
 * running the interactive-question script: its turn waits for an answer for as long as the test
 * lets the clock run. Every committed event is kept with the authority's time of commit.
 */
class LongRun {
  readonly clock = new ManualTimers();
  readonly root = mkdtempSync(join(tmpdir(), "prp-durable-lease-"));
  readonly committed: Array<{ event: PrpEvent; at: number }> = [];
  readonly log: string[] = [];
  readonly server: AuthorityServer;
  runner: DurableRunner | null = null;
  outcome: Promise<DurableOutcome> | null = null;
  private stopped = false;

  constructor(authorityHeartbeat?: HeartbeatOptions, heartbeatIntervalMs?: number) {
    this.server = AuthorityServer.open({
      stateDir: join(this.root, "authority"),
      serverKey: ServerKey.generate(),
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      now: this.clock.now,
      ...(authorityHeartbeat ? { heartbeat: authorityHeartbeat } : {}),
      ...(heartbeatIntervalMs ? { heartbeatIntervalMs } : {}),
      onCommittedEvent: (event) => void this.committed.push({ event, at: this.clock.now() }),
    });
  }

  async start(runnerHeartbeat?: HeartbeatOptions): Promise<void> {
    await this.server.listen(0);
    assert.ok((await this.server.registerRun(IDENTITY)).ok);
    for (const [type, payload] of [
      ["run.prepare", { workspace: "lease" }],
      ["session.open", { reuse: "new_per_run" }],
      ["turn.start", { text: "Ask, and wait.", turnId: IDENTITY.turnId }],
    ] as const) {
      assert.ok((await this.server.queueCommand(IDENTITY.runId, type, payload)).ok);
    }
    const ticket = await this.server.issueBootstrapTicket(IDENTITY.runId);
    assert.ok(ticket.ok);
    this.runner = new DurableRunner({
      identity: IDENTITY,
      connectUrl: this.server.connectUrl(IDENTITY.runId),
      stateDir: join(this.root, "runner"),
      bootstrapToken: ticket.value.token,
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      reconnectDelayMs: 50,
      clock: this.clock,
      ...(runnerHeartbeat ? { heartbeat: runnerHeartbeat } : {}),
      driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath("interactive-question"), delayMs: 0 }),
      log: (text) => this.log.push(text),
    });
    this.outcome = this.runner.run().finally(() => (this.stopped = true));
  }

  committedAt(eventType: string): number | undefined {
    return this.committed.find((c) => c.event.eventType === eventType)?.at;
  }

  /** The run's current lease as the authority's database file holds it. */
  storedLease(): { expiresAt: number; renewals: number } {
    const raw = new Database(join(this.root, "authority", STORE_FILE), { readonly: true });
    try {
      const row = raw
        .prepare(
          "SELECT c.expires_at, coalesce(r.renewals, 0) AS renewals FROM runs JOIN credentials c ON c.lease_id = runs.last_lease_id LEFT JOIN lease_renewals r USING (credential_id) WHERE runs.run_id = ?",
        )
        .get(IDENTITY.runId) as { expires_at: number; renewals: number };
      return { expiresAt: row.expires_at, renewals: row.renewals };
    } finally {
      raw.close();
    }
  }

  async answerAndFinish(): Promise<DurableOutcome> {
    assert.ok((await this.server.queueCommand(IDENTITY.runId, "request.resolve", ANSWER)).ok);
    return within(this.outcome!, 30_000, "the run to be delivered");
  }

  /**
   * A runner still going (a failed test) is cancelled, and its lease let run out so that it stops
   * redialling; then the authority closes.
   */
  async close(): Promise<void> {
    try {
      if (this.outcome && !this.stopped) {
        this.runner!.cancel();
        this.clock.advance(10 * DEFAULT_LEASE_TTL_MS);
        await within(this.outcome, 30_000, "the runner to stop");
      }
      await this.server.close();
    } finally {
      rmSync(this.root, { recursive: true, force: true });
    }
  }
}

describe("a durable run on a renewed lease (runtime.md §5.9)", () => {
  let run: LongRun;
  beforeEach(() => {
    run = undefined as unknown as LongRun;
  });
  afterEach(async () => {
    await run?.close();
  });

  it("a turn longer than three 60 s lease periods succeeds on one connection, its lease renewed halfway each time", async () => {
    run = new LongRun();
    await run.start();
    await until(() => run.committedAt("runtime_request.created") !== undefined, "the question");
    const started = run.clock.now();
    assert.equal(run.storedLease().expiresAt, started + DEFAULT_LEASE_TTL_MS, "the default lease");

    // 200 s in steps of 5 s. A renewal that falls due in a step is sent, persisted, answered and
    // adopted before the next step: the runner's only timer on this clock is then its next
    // renewal, due halfway through the lease the authority stored (an unanswered renewal's retry
    // is due earlier).
    for (let step = 1; step <= 40; step++) {
      run.clock.advance(5_000);
      await until(
        () => run.clock.waiting === 1 && run.clock.nextDueAt === run.storedLease().expiresAt - DEFAULT_LEASE_TTL_MS / 2,
        `the runner to hold a renewed lease after step ${step}`,
      );
      assert.ok(
        run.storedLease().expiresAt - run.clock.now() > DEFAULT_LEASE_TTL_MS / 2,
        `more than half the lease is left after step ${step}`,
      );
    }
    const outcome = await run.answerAndFinish();
    assert.deepEqual(outcome, { code: 0, reason: "run_delivered" }, run.log.join("\n"));

    const turnStarted = run.committedAt("turn.submitted")!;
    const turnEnded = run.committedAt("turn.completed")!;
    assert.ok(
      turnEnded - turnStarted > 3 * DEFAULT_LEASE_TTL_MS,
      `the turn lasted ${turnEnded - turnStarted} ms on the authority's clock`,
    );
    const terminal = run.committed.at(-1)!.event;
    assert.equal(terminal.eventType, "run.terminal");
    assert.equal((terminal.payload as { runTerminalState?: string }).runTerminalState, "succeeded");
    const seqs = run.committed.map((c) => c.event.sourceSeq);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      "every event committed once, in order",
    );

    const snapshot = await run.server.run(IDENTITY.runId);
    assert.deepEqual(
      [snapshot?.connectionCount, snapshot?.freshBootstraps],
      [1, 1],
      "never reconnected, never bootstrapped again",
    );
    const lease = run.storedLease();
    assert.equal(lease.renewals, 6, "renewed every 30 s over 200 s");
    assert.ok(lease.expiresAt > run.clock.now(), "the lease outlived the run");
    assert.ok(!run.log.some((line) => /lease|closed/.test(line)), run.log.join("\n"));
  });

  it("an authority gone silent is closed as peer_silent and redialled with the lease; the run still completes", async () => {
    run = new LongRun(STILL_HEARTBEAT, 100); // the authority never pings; the runner checks every 100 ms
    await run.start({ deadPeerTimeoutMs: 300 });
    await until(() => run.committedAt("runtime_request.created") !== undefined, "the question");
    await until(async () => ((await run.server.run(IDENTITY.runId))?.connectionCount ?? 0) >= 3, "two redials");
    const outcome = await run.answerAndFinish();
    assert.deepEqual(outcome, { code: 0, reason: "run_delivered" }, run.log.join("\n"));
    assert.ok(
      run.log.some((line) => /closed: peer_silent/.test(line)),
      run.log.join("\n"),
    );
    const snapshot = await run.server.run(IDENTITY.runId);
    assert.equal(snapshot?.freshBootstraps, 1, "every redial used the lease, not a new bootstrap");
    const seqs = run.committed.map((c) => c.event.sourceSeq);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      "nothing lost or committed twice across the redials",
    );
    assert.equal(run.committed.at(-1)!.event.eventType, "run.terminal");
  });
});
