import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { runDurable, type FaultContext } from "../../src/fault/durable-run.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { loadScript } from "../../src/harness/script-file.js";
import { goalEventProblems, goalTrail, writeGoalScript } from "../support/goal-script.js";
import { loadedScript, PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";

const dir = mkdtempSync(join(tmpdir(), "prp-goals-durable-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const script = (path: string) => {
  const loaded = loadScript(path);
  assert.ok(loaded.ok, `the script ${path} loads`);
  return loaded.value;
};

/** Waits until the authority has committed `n` events of a type (its record, not the runner's word). */
const committed = (ctx: FaultContext, type: string, n = 1) =>
  until(
    () => ctx.committed().filter((e) => e.eventType === type).length >= n,
    () =>
      `${n} × ${type} committed; the authority has ${ctx
        .committed()
        .map((e) => e.eventType)
        .join(", ")}`,
    30_000,
  );

/** Queues a command through the authority; it must be accepted. */
async function queue(ctx: FaultContext, type: string, payload: Record<string, unknown>): Promise<void> {
  const queued = await ctx.authority.queueCommand(ctx.runId, type, payload);
  assert.ok(queued.ok, queued.ok ? "" : `${queued.error.code}: ${queued.error.message}`);
}

describe("session goals over a durable connection, judged by the authority's stored record", () => {
  it("v3: goal commands answered once and in order; after a runner restart the retained capability and goal are sent again", async () => {
    let restartedAt = 0;
    const facts = await runDurable({
      script: script(writeGoalScript(dir, 3, true)), // the runner's get, a set, a pause; then the harness holds
      dir,
      delayMs: 0,
      runnerArgs: PATIENT_HARNESS,
      protocolVersion: 3,
      faults: [
        {
          afterEvents: 1,
          act: async (ctx) => {
            await committed(ctx, "session.goal.snapshot");
            await queue(ctx, "session.goal.set", {
              requestId: "req_1",
              objective: "Keep the build green",
              tokenBudget: 7000,
            });
            await committed(ctx, "session.goal.updated");
            await queue(ctx, "session.goal.set", { status: "paused" });
            await committed(ctx, "session.goal.updated", 2);
            restartedAt = ctx.committed().length;
            await ctx.restartRunner();
          },
        },
      ],
    });
    const events = facts.events;
    assert.ok(restartedAt > 0, "the restart point was reached");
    assert.equal(facts.runnerPids.length, 2, "a replacement runner was started");
    assert.equal(facts.run?.protocolVersion, 3);
    assert.deepEqual(goalEventProblems(events, 3), []);
    const goal = { objective: "Keep the build green", status: "active", workingNow: false, tokenBudget: 7000 };
    const capability = `session.capabilities.updated ${JSON.stringify({ sessionGoals: { availability: "available", actions: ["get", "set", "pause", "resume", "clear"] } })}`;
    const paused = `session.goal.updated ${JSON.stringify({ goal: { ...goal, status: "paused" } })}`;
    assert.deepEqual(goalTrail(events.slice(0, restartedAt)), [
      capability,
      'session.goal.snapshot {"goal":null}',
      `session.goal.updated ${JSON.stringify({ goal })}`,
      paused,
    ]);
    const after = events.slice(events.findIndex((e) => e.eventType === "runner.reconciled"));
    assert.ok(
      after.length > 0 && after[0]!.sourceSeq > events[restartedAt - 1]!.sourceSeq,
      "runner.reconciled follows the restart",
    );
    assert.deepEqual(
      goalTrail(after),
      [capability, paused],
      "the replacement sends the current goal state again, before the run's end",
    );
    assert.equal(events.at(-1)!.eventType, "run.terminal");
    assert.deepEqual(facts.survivors, []);
  });

  it("v1: the run is registered for v1 and the runner offers only v1: no v2 event in the record, and goal commands are refused by name", async () => {
    const refusals: string[] = [];
    const facts = await runDurable({
      script: loadedScript("goals"),
      dir,
      delayMs: 0,
      runnerArgs: PATIENT_HARNESS,
      protocolVersion: 1,
      faults: [
        {
          afterEvents: 1,
          act: async (ctx) => {
            for (const [type, payload] of [
              ["session.goal.set", { objective: "Keep the build green" }],
              ["session.goal.get", {}],
              ["session.goal.clear", {}],
            ] as const) {
              const queued = await ctx.authority.queueCommand(ctx.runId, type, payload);
              refusals.push(queued.ok ? `queued ${type}` : `${queued.error.code} ${queued.error.path}`);
            }
          },
        },
      ],
    });
    assert.deepEqual(refusals, Array(3).fill("command_needs_newer_version /type"));
    assert.equal(facts.run?.protocolVersion, 1);
    assert.equal(facts.events.at(-1)!.eventType, "run.terminal");
    assert.equal((facts.events.at(-1)!.payload as { runTerminalState: string }).runTerminalState, "succeeded");
    assert.deepEqual(goalEventProblems(facts.events, 1), []);
    assert.deepEqual(
      facts.events
        .filter((e: PrpEvent) => e.schemaVersion !== 1 || e.schema !== "paperclip.prp.event.v1")
        .map((e) => e.eventType),
      [],
    );
    assert.ok(facts.run!.commandCount === 3, "nothing but the three opening commands was queued");
  });

  it("a runner that offers 1-1 for a run registered for v3 is refused at the handshake: no connection and no run", async () => {
    const facts = await runDurable({
      script: loadedScript("goals"),
      dir,
      delayMs: 0,
      protocolVersion: 3,
      runnerArgs: [...PATIENT_HARNESS, "--protocol-max", "1"],
    });
    assert.deepEqual(facts.events, []);
    assert.deepEqual(
      facts.runnerExits.map((e) => e.exitCode),
      [3],
      "bootstrap_possibly_consumed: the runner stops",
    );
    assert.ok(
      facts.runnerLogs.flat().some((l) => /version_mismatch/.test(l)),
      `the refusal is named: ${facts.runnerLogs.flat().join(" | ")}`,
    );
  });
});

describe("goalEventProblems, the judge of a goal trail, must fail", () => {
  const event = (sourceSeq: number, eventType: string, version: number, id = `event_${sourceSeq}`) =>
    ({
      schema: `paperclip.prp.event.v${version}`,
      schemaVersion: version,
      sourceSeq,
      sourceEventId: id,
      eventType,
      payload: {},
    }) as unknown as PrpEvent;

  it("on a goal event committed twice, out of order, or under the wrong envelope", () => {
    assert.deepEqual(
      goalEventProblems([event(1, "session.goal.snapshot", 3), event(2, "session.goal.updated", 3)], 3),
      [],
    );
    assert.equal(
      goalEventProblems([event(1, "session.goal.snapshot", 3), event(1, "session.goal.snapshot", 3, "event_1")], 3)
        .length,
      2,
      "twice, and not after the first",
    );
    assert.match(
      goalEventProblems([event(5, "session.goal.snapshot", 3), event(4, "session.goal.updated", 3)], 3)[0]!,
      /out of order/,
    );
    assert.match(goalEventProblems([event(1, "session.goal.snapshot", 2)], 3)[0]!, /not v3/);
  });

  it("on any goal event on a v1 connection", () => {
    assert.match(
      goalEventProblems([event(1, "turn.started", 1), event(2, "session.capabilities.updated", 2)], 1)[0]!,
      /on a v1 connection/,
    );
  });
});
