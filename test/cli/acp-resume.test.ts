import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { agentRunnerdArgs } from "../../src/cli/agent-options.js";
import { runDurable, type FaultContext } from "../../src/fault/durable-run.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { until } from "../support/until.js";

type Obj = Record<string, any>;
const payloads = (events: PrpEvent[], type: string): Obj[] =>
  events.filter((e) => e.eventType === type).map((e) => e.payload as Obj);
const agentGroups = (events: PrpEvent[]): number[] => payloads(events, "harness.ready").map((p) => p.pid as number);

/**
 * Warm resume: a durable runner running an ACP agent is SIGKILLed (its agent's group
 * is then ended by the orphan guard) and relaunched on the same state. Everything is judged
 * from the authority's committed record, the agent's own session store and /proc.
 */
describe("ACP warm resume: a restarted durable runner loads the agent's session (session/load)", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-acp-resume-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs `scenario` durably; `killWhen` says when the first runner dies, judged from the committed record. */
  const run = async (
    name: string,
    scenario: string,
    options: { sessions: boolean; holdTurn?: boolean; killWhen: (committed: PrpEvent[]) => boolean },
  ) => {
    const sessions = join(dir, `${name}-sessions`);
    const agentCommand = `${testAgentCommand(scenario)}${options.sessions ? ` --session-dir ${sessions}` : ""}`;
    let killedAfter: PrpEvent[] | null = null;
    const facts = await runDurable({
      agent: {
        runnerdArgs: agentRunnerdArgs({ agent: { command: agentCommand }, permissionPolicy: "deny", agentCwd: dir }),
        prompt: "Fix the failing test.",
        ...(options.holdTurn ? { holdTurn: true } : {}),
      },
      dir,
      ticketTtlMs: 60_000,
      faults: [
        {
          afterEvents: 1,
          act: async (ctx: FaultContext) => {
            await until(
              () => options.killWhen(ctx.committed()),
              () =>
                `the kill point; committed: ${ctx
                  .committed()
                  .map((e) => e.eventType)
                  .join(", ")}`,
              30_000,
            );
            killedAfter = [...ctx.committed()];
            const group = agentGroups(killedAfter)[0]!;
            assert.ok(liveGroupMembers(group).length > 0, "the first agent is running when its runner is killed");
            await ctx.restartRunner();
            await until(
              () => liveGroupMembers(group).length === 0,
              () =>
                `the orphan guard ends the first agent's group ${group}: ${describeProcesses(liveGroupMembers(group))}`,
            );
            if (options.holdTurn) {
              await until(
                () => ctx.committed().some((e) => e.eventType === "session.resumed" || e.eventType === "run.terminal"),
                "the session resumed (or the run ended)",
                30_000,
              );
              await ctx.startTurn();
            }
          },
        },
      ],
    });
    const logs = `runner logs:\n${facts.runnerLogs.flat().join("\n")}`;
    assert.ok(killedAfter, `the kill point was reached\n${logs}`);
    assert.equal(facts.runnerExits[0]?.signal, "SIGKILL", "the first runner was killed");
    const events = facts.events;
    const types = events.map((e) => e.eventType);
    assert.equal(
      types.filter((t) => t === "run.terminal").length,
      1,
      `exactly one run.terminal\n${types.join(", ")}\n${logs}`,
    );
    assert.equal(types.at(-1), "run.terminal");
    events.forEach((e, i) => assert.equal(e.sourceSeq, i + 1, "each event committed once, contiguous"));
    assert.equal(new Set(events.map((e) => e.sourceEventId)).size, events.length, "no event id twice");
    for (const group of agentGroups(events))
      await until(
        () => liveGroupMembers(group).length === 0,
        () => `no live process in agent group ${group}: ${describeProcesses(liveGroupMembers(group))}`,
      );
    assert.deepEqual(facts.survivors, [], "no process of the run outlives it");
    const terminal = events.at(-1)!.payload as Obj;
    return {
      events,
      types,
      terminal,
      killedAfter: killedAfter as unknown as PrpEvent[],
      sessions,
      states: [terminal.turnTerminalState, terminal.runTerminalState, terminal.reconciliation.reason],
    };
  };

  it("killed between the session and the turn: the new agent loads the same session, then the turn runs there and succeeds", async () => {
    const r = await run("between", "streamed-answer", {
      sessions: true,
      holdTurn: true,
      killWhen: (c) =>
        c.some((e) => e.eventType === "runtime.phase.changed" && (e.payload as Obj).phase === "executing"),
    });
    assert.equal(
      r.killedAfter.some((e) => e.eventType === "turn.submitted"),
      false,
      "killed before the turn",
    );
    const started = payloads(r.events, "session.started");
    const resumed = payloads(r.events, "session.resumed");
    assert.equal(started.length, 1);
    assert.deepEqual(
      resumed.map((p) => p.driverSessionId),
      [started[0]!.driverSessionId],
      "the same ACP session, resumed once",
    );
    assert.deepEqual(payloads(r.events, "runner.reconciled"), [
      { outcome: "same_durable_session_resumed", harness: "lost", session: "resuming" },
    ]);
    assert.equal(agentGroups(r.events).length, 2, "a second agent process");
    assert.ok(
      r.types.indexOf("session.resumed") < r.types.indexOf("turn.started"),
      "the turn runs in the loaded session",
    );
    assert.deepEqual(r.states, ["completed", "succeeded", "successful_process_and_result"]);
    assert.equal(payloads(r.events, "run.result.proposed")[0]!.summary, "I fixed the greeting: the test passes now.");
  });

  it("killed mid-turn: the session is resumed, its history replay is not reported again, and the turn is indeterminate: failed, never re-sent", async () => {
    const r = await run("mid-turn", "working", {
      sessions: true,
      killWhen: (c) => c.some((e) => e.eventType === "item.delta"),
    });
    assert.equal(
      r.killedAfter.some((e) => e.eventType === "turn.completed"),
      false,
      "killed inside the turn",
    );
    assert.deepEqual(
      payloads(r.events, "session.resumed").map((p) => p.driverSessionId),
      payloads(r.events, "session.started").map((p) => p.driverSessionId),
    );
    assert.equal(r.types.filter((t) => t === "turn.started").length, 1, "one prompt");
    assert.deepEqual(
      payloads(r.events, "item.delta").map((p) => p.text),
      ["Working on it. "],
      "the replayed history is not reported again",
    );
    assert.deepEqual(
      payloads(r.events, "turn.failed").map((p) => p.code),
      ["turn_indeterminate"],
    );
    assert.deepEqual(r.states, ["failed", "failed", "harness_process_failed"]);
    assert.equal(r.terminal.stopReason.code, "turn_indeterminate");
    assert.match(r.terminal.stopReason.message, /prompt is not sent again/);
    // The agent's own record: its session holds the one turn's update, not a second prompt's.
    const id = payloads(r.events, "session.started")[0]!.driverSessionId as string;
    const stored = readFileSync(join(r.sessions, `${id}.jsonl`), "utf8")
      .trimEnd()
      .split("\n");
    assert.equal(stored.length, 2, `header and one update: ${stored.join(" | ")}`);
  });

  it("an agent that does not advertise loadSession: the run fails closed (session_not_resumable), no second agent is started", async () => {
    const r = await run("no-load", "cancel", {
      sessions: true,
      killWhen: (c) => c.some((e) => e.eventType === "item.delta"),
    });
    assert.equal(agentGroups(r.events).length, 1, "no second agent");
    assert.equal(r.types.includes("session.resumed"), false);
    assert.deepEqual(r.states, ["failed", "failed", "harness_process_failed"]);
    assert.equal(r.terminal.stopReason.code, "session_not_resumable");
    assert.match(r.terminal.stopReason.message, /does not advertise loadSession/);
  });

  it("session/load fails (the new agent cannot find the session): the run fails closed (session_resume_failed) with the agent's reason", async () => {
    const r = await run("load-fails", "working", {
      sessions: false,
      killWhen: (c) => c.some((e) => e.eventType === "item.delta"),
    });
    assert.equal(existsSync(join(dir, "load-fails-sessions")), false, "the agent kept no sessions");
    assert.equal(agentGroups(r.events).length, 2);
    const failed = payloads(r.events, "session.failed");
    assert.deepEqual(
      failed.map((p) => [p.code, p.method]),
      [["resource_not_found", "session/load"]],
    );
    assert.equal(r.types.includes("session.resumed"), false);
    assert.deepEqual(r.states, ["failed", "failed", "harness_process_failed"]);
    assert.equal(r.terminal.stopReason.code, "session_resume_failed");
    assert.match(
      r.terminal.stopReason.message,
      /could not resume session acp_test_session_1: the agent does not know this resource/,
    );
  });
});
