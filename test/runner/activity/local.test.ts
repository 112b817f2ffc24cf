import assert from "node:assert/strict";
import { lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { scenariosDir } from "../../../src/harness/script-file.js";
import { CONTEXT_ENV, HELPER_ENV, SECRET_ENV, helperPath } from "../../../src/harness/notification-env.js";
import { LocalRunnerClient } from "../../../src/runner/local-client.js";
import { faultyRunnerd } from "../../../src/fault/runner-crash.js";
import { eventLine } from "../../../src/cli/event-line.js";
import { runPrp } from "../../cli/run-cli.js";
import { PATIENT_HARNESS } from "../../support/scripts.js";
import { until } from "../../support/until.js";
import {
  crossRunCalls,
  helper,
  judgeActivity,
  notificationEnvOf,
  waitingRunner,
  type ActivityCall,
} from "./support.js";

const activities = (events: PrpEvent[]) =>
  events.filter((e) => e.eventType === "runtime.activity.recorded").map((e) => e.payload);
const event = (type: string, payload: Record<string, unknown>, seq = 1) =>
  ({ eventType: type, payload, sourceSeq: seq }) as unknown as PrpEvent;

describe("runtime activity in local mode (prp-runnerd --local)", () => {
  it("the judge fails a log that lost an acknowledged record, repeated one, holds a refused one or one nobody asked for", () => {
    const calls: ActivityCall[] = [
      { namespace: "ns", activityKey: "ok", status: 0 },
      { namespace: "ns", activityKey: "stale", status: 3 },
      { namespace: "ns", activityKey: "lost", status: 4 },
    ];
    const good = [event("runtime.activity.recorded", { namespace: "ns", activityKey: "ok" })];
    assert.deepEqual(judgeActivity(calls, good), []);
    assert.deepEqual(
      judgeActivity(calls, [...good, event("runtime.activity.recorded", { namespace: "ns", activityKey: "lost" })]),
      [],
      "a call that ended 4 may be in the log once",
    );
    assert.equal(judgeActivity(calls, []).length, 1, "an acknowledged record missing");
    assert.equal(judgeActivity(calls, [...good, ...good]).length, 1, "an acknowledged record twice");
    assert.equal(
      judgeActivity(calls, [...good, event("runtime.activity.recorded", { namespace: "ns", activityKey: "stale" })])
        .length,
      1,
      "a refused record in the log",
    );
    assert.equal(
      judgeActivity(calls, [...good, event("runtime.activity.recorded", { namespace: "x", activityKey: "y" })]).length,
      1,
      "a record nobody asked for",
    );
  });

  it("the runtime-activity scenario's harness records through the published helper: each success one event, shown live and by prp replay", async () => {
    const events: PrpEvent[] = [];
    const client = new LocalRunnerClient({
      runId: "run_activity_scenario",
      sessionId: "session_activity_scenario",
      runnerId: "runner_activity_scenario",
      scriptPath: join(scenariosDir(), "runtime-activity.json"),
      delayMs: 0,
      extraArgs: PATIENT_HARNESS,
      onEvent: (e) => events.push(e),
      onReceipt: () => {},
      onBadLine: () => {},
    });
    const out = mkdtempSync(join(tmpdir(), "prp-activity-run-"));
    try {
      client.send("run.prepare");
      client.send("session.open");
      client.send("turn.start", { turnId: "turn_1" });
      assert.equal((await client.exited()).exitCode, 0, client.stderrTail().join("\n"));
      assert.deepEqual(activities(events), [
        { namespace: "paperclip.test", activityKey: "tests.passed" },
        { namespace: "paperclip.review", activityKey: "diff.opened" },
      ]);
      for (const e of events.filter((e) => e.eventType === "runtime.activity.recorded"))
        assert.equal(e.priority, 1, "P1");
      assert.equal((events.at(-1)!.payload as any).runTerminalState, "succeeded");
      // The harness's own record of the helper's exit status (its log tail, carried by harness.exited).
      const log = ((events.find((e) => e.eventType === "harness.exited")!.payload as any).log.lines as string[]).join(
        "\n",
      );
      assert.match(log, /"paperclip.test" "tests.passed": record-activity exited 0/);
      assert.match(log, /"paperclip.review" "diff.opened": record-activity exited 0/);
      // What prp run, prp demo and prp fault print for each event as it comes.
      const shown = events.map(eventLine).join("\n");
      assert.match(shown, /runtime\.activity\.recorded +activity paperclip\.test: tests\.passed/);
      writeFileSync(join(out, "events.ndjson"), events.map((e) => JSON.stringify(e)).join("\n") + "\n");
      const replayed = runPrp(["replay", "--events", join(out, "events.ndjson")]);
      assert.equal(replayed.status, 0, replayed.stderr);
      assert.match(replayed.stdout, /activity +paperclip\.test: tests\.passed/);
      assert.match(replayed.stdout, /activity +paperclip\.review: diff\.opened/);
    } finally {
      await client.terminate();
      rmSync(out, { recursive: true, force: true });
    }
  });

  it("publishes a 0600 descriptor and socket to the harness; each exit 0 is in the stream exactly once, refusals are in it never", async () => {
    const { client, events, describe, env } = await waitingRunner("run_activity");
    try {
      assert.equal(env[HELPER_ENV], helperPath(), "the helper is this build's prp-runnerd, by absolute path");
      const descriptor = env[CONTEXT_ENV]!;
      assert.equal(lstatSync(descriptor).mode & 0o777, 0o600, "descriptor 0600");
      const socket = JSON.parse(readFileSync(descriptor, "utf8")).socket as string;
      assert.ok(lstatSync(socket).isSocket());
      assert.equal(lstatSync(socket).mode & 0o777, 0o600, "socket 0600");

      const context = await helper(env, ["notification-context"], env[HELPER_ENV]);
      assert.equal(context.status, 0, context.stderr);
      const ctx = context.stdout.trim();
      const calls: ActivityCall[] = [];
      const call = async (namespace: string, activityKey: string, withContext = ctx) => {
        const ran = await helper(env, ["record-activity", withContext, namespace, activityKey], env[HELPER_ENV]);
        calls.push({ namespace, activityKey, status: ran.status });
        return ran;
      };
      assert.equal((await call("paperclip.test", "one")).status, 0);
      // Exit 0 means the record was already written to stdout: it is there without waiting for more.
      await until(() => activities(events).length === 1, describe);
      assert.equal((await call("paperclip.test", "two")).status, 0);
      assert.equal((await call("paperclip.test", "bad\u0001")).status, 2);
      assert.equal((await call("paperclip.test", "stale", "ctx_not_the_current_one")).status, 3);
      client.send("turn.interrupt", { reason: "test over" });
      client.close();
      await client.exited();
      const late = await call("paperclip.test", "after-exit");
      assert.equal(late.status, 4, late.stderr);
      assert.deepEqual(judgeActivity(calls, events), [], describe());
      assert.equal(events.at(-1)!.eventType, "run.terminal", "nothing after the terminal");
      assert.throws(() => lstatSync(descriptor), /ENOENT/, "the local descriptor's private folder is removed at exit");
    } finally {
      await client.terminate();
    }
  });

  it("one run's harness cannot record into another run: its secret is refused at the other's socket, and the other's stream holds nothing", async () => {
    const a = await waitingRunner("run_cross_a");
    const b = await waitingRunner("run_cross_b");
    try {
      assert.notEqual(a.env[SECRET_ENV], b.env[SECRET_ENV], "each harness has its own secret");
      for (const env of [a.env, b.env]) {
        const folder = dirname(env[CONTEXT_ENV]!);
        assert.equal(
          realpathSync(dirname(folder)),
          realpathSync(tmpdir()),
          "the descriptor is in a folder of its own under the temporary folder",
        );
        assert.match(folder, /\/prp-activity-[^/]+$/);
      }
      const calls = await crossRunCalls(a.env, b.env);
      // What B's own harness does with the same helper is served: the judge below can see a record.
      const own = await helper(b.env, ["record-activity", calls.context, "paperclip.test", "own"]);
      assert.equal(own.status, 0, own.stderr);
      for (const c of [a, b]) {
        c.client.send("turn.interrupt", { reason: "test over" });
        c.client.close();
        await c.client.exited();
      }
      assert.deepEqual(
        judgeActivity(
          [...calls.calls, { namespace: "paperclip.test", activityKey: "own", status: own.status }],
          b.events,
        ),
        [],
        b.describe(),
      );
      assert.equal(activities(a.events).length, 0, a.describe());
    } finally {
      await a.client.terminate();
      await b.client.terminate();
    }
  });

  it("a restarted harness gets a new secret: the crashed one's is refused, the new one's served", async () => {
    const run = await waitingRunner("run_generations");
    try {
      const readies = () => run.events.filter((e) => e.eventType === "harness.ready");
      const first = (readies()[0]!.payload as any).pid as number;
      process.kill(-first, "SIGKILL"); // a crash: the runner starts a second harness
      await until(() => readies().length === 2, run.describe, 30_000);
      const second = notificationEnvOf((readies()[1]!.payload as any).pid as number);
      assert.notEqual(second[SECRET_ENV], run.env[SECRET_ENV], "a fresh secret for the new harness");
      const context = await helper(second, ["notification-context"]);
      assert.equal(context.status, 0, context.stderr);
      const calls: ActivityCall[] = [];
      for (const [env, key] of [
        [run.env, "stale-generation"],
        [second, "current-generation"],
      ] as const) {
        const ran = await helper(env, ["record-activity", context.stdout.trim(), "paperclip.test", key]);
        if (key === "stale-generation") assert.match(ran.stderr, /generation_refused/);
        calls.push({ namespace: "paperclip.test", activityKey: key, status: ran.status });
      }
      assert.deepEqual(
        calls.map((c) => c.status),
        [3, 0],
      );
      run.client.send("turn.interrupt", { reason: "test over" });
      run.client.close();
      await run.client.exited();
      assert.deepEqual(judgeActivity(calls, run.events), [], run.describe());
    } finally {
      await run.client.terminate();
    }
  });

  for (const [point, inStream] of [
    ["before-activity-commit:1", 0],
    ["after-activity-commit:1", 1],
  ] as const) {
    it(`a runner killed at ${point} while record-activity waits: the helper exits 4, the stream holds the record ${inStream} time(s), and the next runner refuses the old context`, async () => {
      const first = await waitingRunner(`run_crash_${inStream}`, { PRP_RUNNER_CRASH_AT: point }, faultyRunnerd());
      let second: Awaited<ReturnType<typeof waitingRunner>> | null = null;
      try {
        const context = await helper(first.env, ["notification-context"]);
        assert.equal(context.status, 0, context.stderr);
        const ctx = context.stdout.trim();
        const ran = await helper(first.env, ["record-activity", ctx, "paperclip.test", "crash"]);
        assert.equal(ran.status, 4, ran.stderr);
        assert.match(ran.stderr, /may or may not be recorded/);
        const exit = await first.client.exited();
        assert.equal(exit.signal, "SIGKILL");
        assert.ok(
          first.client.stderrTail().some((l) => l.includes(`crash point ${point} reached`)),
          first.describe(),
        );
        assert.deepEqual(
          judgeActivity([{ namespace: "paperclip.test", activityKey: "crash", status: 4 }], first.events),
          [],
        );
        assert.equal(activities(first.events).length, inStream, first.describe());
        // The controller starts a new runner (a local run cannot be resumed): the old context is not its.
        second = await waitingRunner(`run_after_crash_${inStream}`);
        const stale = await helper(second.env, ["record-activity", ctx, "paperclip.test", "stale"]);
        assert.equal(stale.status, 3, stale.stderr);
        assert.match(stale.stderr, /context_invalidated/);
        second.client.send("turn.interrupt", { reason: "test over" });
        second.client.close();
        await second.client.exited();
        assert.equal(activities(second.events).length, 0, second.describe());
      } finally {
        await first.client.terminate();
        await second?.client.terminate();
      }
    });
  }
});
