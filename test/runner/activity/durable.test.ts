import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runDurable, type DurableRunFacts, type FaultContext } from "../../../src/fault/durable-run.js";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { loadedScript, PATIENT_HARNESS } from "../../support/scripts.js";
import { until } from "../../support/until.js";
import { CONTEXT_ENV, SECRET_ENV } from "../../../src/harness/notification-env.js";
import { FAKE_HARNESS_JOURNAL_ENV } from "../../../src/harness/goal-journal.js";
import {
  crossRunCalls,
  environOf,
  helper,
  judgeActivity,
  notificationEnvOf,
  waitingRunner,
  type ActivityCall,
  type HelperRun,
} from "./support.js";

const activities = (events: PrpEvent[]) => events.filter((e) => e.eventType === "runtime.activity.recorded");

/**
 * Once the harness waits for an interrupt: capture a context, record one activity, and keep what
 * the helper said; `then` goes on with the harness's environment and the context.
 */
function recordWhenWaiting(
  calls: ActivityCall[],
  runs: HelperRun[],
  then?: (ctx: FaultContext, env: Record<string, string>, context: string) => Promise<void>,
) {
  return {
    afterEvents: 1,
    act: async (ctx: FaultContext) => {
      const waiting = () =>
        ctx
          .committed()
          .some((e) => e.eventType === "runtime.phase.changed" && (e.payload as any).phase === "awaiting_interrupt");
      await until(waiting, "the turn to wait for an interrupt", 30_000);
      const pid = (ctx.committed().find((e) => e.eventType === "harness.ready")!.payload as any).pid as number;
      const env = notificationEnvOf(pid);
      const context = await helper(env, ["notification-context"]);
      assert.equal(context.status, 0, context.stderr);
      const ran = await helper(env, ["record-activity", context.stdout.trim(), "paperclip.test", "tests.passed"]);
      runs.push(ran);
      calls.push({ namespace: "paperclip.test", activityKey: "tests.passed", status: ran.status });
      await then?.(ctx, env, context.stdout.trim());
    },
  };
}

describe("runtime activity in durable mode: the authority's stored events", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-activity-durable-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const protocolVersion of [1, 3])
    it(`the runtime-activity scenario on a v${protocolVersion} connection: each helper exit 0 is one committed event, sent by the runner with the run's identity`, async () => {
      const facts = await runDurable({
        script: loadedScript("runtime-activity"),
        dir,
        delayMs: 0,
        runnerArgs: PATIENT_HARNESS,
        protocolVersion,
      });
      assert.equal(
        facts.run?.protocolVersion,
        protocolVersion,
        "the run's version in the authority's record, which its runner must have negotiated",
      );
      const recorded = activities(facts.events);
      assert.deepEqual(
        recorded.map((e) => e.payload),
        [
          { namespace: "paperclip.test", activityKey: "tests.passed" },
          { namespace: "paperclip.review", activityKey: "diff.opened" },
        ],
      );
      for (const e of recorded) {
        assert.equal(e.runId, facts.runId);
        assert.equal(e.sourceKind, "runner");
        assert.equal(e.priority, 1);
      }
      assert.equal(
        new Set(facts.events.map((e) => e.sourceEventId)).size,
        facts.events.length,
        "no event committed twice",
      );
      assert.equal(facts.run?.ackedSourceSeq, facts.events.length, "the authority acknowledged every event it stored");
      const log = (
        (facts.events.find((e) => e.eventType === "harness.exited")!.payload as any).log.lines as string[]
      ).join("\n");
      assert.equal(log.match(/record-activity exited 0/g)?.length, 2, log);
    });

  it("bad arguments exit 2 and a context that is not the runner's exits 3: the authority stores only the acknowledged record", async () => {
    const calls: ActivityCall[] = [];
    const runs: HelperRun[] = [];
    const facts = await runDurable({
      script: loadedScript("linger"),
      dir,
      delayMs: 0,
      runnerArgs: PATIENT_HARNESS,
      faults: [
        recordWhenWaiting(calls, runs, async (ctx, env, context) => {
          for (const [namespace, activityKey, usedContext, status] of [
            ["paperclip.test", "x".repeat(161), context, 2],
            ["paperclip\u007f", "del", context, 2],
            ["paperclip.test", "stale", "ctx_of_a_runner_before_recovery", 3],
          ] as const) {
            const ran = await helper(env, ["record-activity", usedContext, namespace, activityKey]);
            assert.equal(ran.status, status, ran.stderr);
            calls.push({ namespace, activityKey, status: ran.status });
          }
          await ctx.authority.queueCommand(ctx.runId, "turn.interrupt", { reason: "test over" });
        }),
      ],
    });
    assert.deepEqual(
      runs.map((r) => r.status),
      [0],
      runs.map((r) => r.stderr).join("\n"),
    );
    assert.equal(calls.length, 4);
    assert.equal(activities(facts.events).length, 1);
    assert.deepEqual(judgeActivity(calls, facts.events), []);
    assert.equal(facts.events.at(-1)?.eventType, "run.terminal");
  });

  it("another run's harness is refused at this run's socket, the authority stores nothing from it, and the harness's environment names no path in the state directory", async () => {
    const calls: ActivityCall[] = [];
    let stateDir = "";
    let harnessEnv: Record<string, string> = {};
    const facts = await runDurable({
      script: loadedScript("linger"),
      dir,
      delayMs: 0,
      runnerArgs: PATIENT_HARNESS,
      faults: [
        {
          afterEvents: 1,
          act: async (ctx: FaultContext) => {
            await until(
              () =>
                ctx
                  .committed()
                  .some(
                    (e) => e.eventType === "runtime.phase.changed" && (e.payload as any).phase === "awaiting_interrupt",
                  ),
              "the turn to wait for an interrupt",
              30_000,
            );
            stateDir = join(ctx.dir, "runner-state");
            harnessEnv = environOf(
              (ctx.committed().find((e) => e.eventType === "harness.ready")!.payload as any).pid as number,
            );
            const b = notificationEnvOf(
              (ctx.committed().find((e) => e.eventType === "harness.ready")!.payload as any).pid as number,
            );
            const a = await waitingRunner("run_cross_into_durable"); // run A: another runner, its own harness
            try {
              const cross = await crossRunCalls(a.env, b);
              calls.push(...cross.calls);
              const own = await helper(b, ["record-activity", cross.context, "paperclip.test", "own"]);
              calls.push({ namespace: "paperclip.test", activityKey: "own", status: own.status });
            } finally {
              await a.client.terminate();
            }
            await ctx.authority.queueCommand(ctx.runId, "turn.interrupt", { reason: "test over" });
          },
        },
      ],
    });
    assert.deepEqual(
      calls.map((c) => c.status),
      [3, 0],
      "A refused, B's own harness served",
    );
    assert.deepEqual(judgeActivity(calls, facts.events), [], "the authority's stored events hold B's own record only");
    assert.equal(activities(facts.events).length, 1);
    assert.ok(
      stateDir.startsWith("/") && harnessEnv[CONTEXT_ENV] && harnessEnv[SECRET_ENV],
      "the harness's environment was read",
    );
    // The fake harness's goal journal must outlive the runner, so it stays with the run's state (a test harness only).
    const naming = Object.entries(harnessEnv).filter(
      ([key, value]) => key !== FAKE_HARNESS_JOURNAL_ENV && value.includes(stateDir),
    );
    assert.deepEqual(naming, [], `no variable names ${stateDir}`);
    assert.doesNotMatch(
      harnessEnv[CONTEXT_ENV]!,
      new RegExp(`^${dir}`),
      "the descriptor is not under the run's folder",
    );
  });

  /** A run whose runner kills itself at `crashAt` while the test's record-activity call waits on it. */
  async function crashWhileRecording(
    crashAt: string,
  ): Promise<{ facts: DurableRunFacts; calls: ActivityCall[]; ran: HelperRun }> {
    const calls: ActivityCall[] = [];
    const runs: HelperRun[] = [];
    const facts = await runDurable({
      script: loadedScript("linger"),
      dir,
      delayMs: 0,
      runnerArgs: PATIENT_HARNESS,
      crashAt,
      faults: [recordWhenWaiting(calls, runs)],
    });
    assert.equal(runs.length, 1, "the helper ran");
    // The kill point was reached: the runner said so, then died of its own SIGKILL.
    assert.ok(
      facts.runnerLogs[0]!.some((l) => l.includes(`crash point ${crashAt} reached`)),
      facts.runnerLogs[0]!.join("\n"),
    );
    assert.equal(facts.runnerExits[0]!.signal, "SIGKILL");
    assert.equal(facts.runnerPids.length, 2, "a replacement runner finished the run on the same state");
    assert.equal(facts.events.filter((e) => e.eventType === "run.terminal").length, 1);
    return { facts, calls, ran: runs[0]! };
  }

  it("a runner killed after the request arrived, before the commit: the helper exits 4 and the authority has no such event", async () => {
    const { facts, calls, ran } = await crashWhileRecording("before-activity-commit:1");
    assert.equal(ran.status, 4, ran.stderr);
    assert.match(ran.stderr, /may or may not be recorded/);
    assert.equal(activities(facts.events).length, 0);
    assert.deepEqual(judgeActivity(calls, facts.events), []);
  });

  it("a runner killed after the commit, before it answered: the helper exits 4, and its replacement delivers the event exactly once", async () => {
    const { facts, calls, ran } = await crashWhileRecording("after-activity-commit:1");
    assert.equal(ran.status, 4, ran.stderr);
    assert.equal(activities(facts.events).length, 1, "committed before the kill: delivered by the replacement, once");
    assert.deepEqual(judgeActivity(calls, facts.events), []);
    assert.equal(
      new Set(facts.events.map((e) => e.sourceEventId)).size,
      facts.events.length,
      "nothing duplicated across the restart",
    );
  });
});
