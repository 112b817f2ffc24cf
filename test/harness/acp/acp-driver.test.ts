import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { liveGroupMembers, describeProcesses } from "../../support/processes.js";
import { until } from "../../support/until.js";
import { AcpDriver } from "../../../src/harness/acp/acp-driver.js";
import type { HarnessFact } from "../../../src/harness/harness-driver.js";
import { within } from "../../support/within.js";
import { driveAgent, testAgentCommand, type Driven } from "./drive-agent.js";

const states = (r: Driven) => [
  r.terminal.turnTerminalState,
  r.terminal.runTerminalState,
  r.terminal.reconciliation.reason,
];
const payload = (r: Driven, type: string, i = 0) => r.of(type)[i]!.payload as Record<string, any>;

/** No process of the agent's group outlives the run (checked in /proc). */
async function noOrphans(r: Driven): Promise<void> {
  const pid = payload(r, "harness.ready").pid as number;
  assert.ok(pid > 1, "harness.ready names the agent's group");
  await until(
    () => liveGroupMembers(pid).length === 0,
    () => `the agent group ${pid} to be gone: ${describeProcesses(liveGroupMembers(pid))}`,
  );
}

describe("the ACP driver in the local runner, against the SDK test agent", () => {
  it("streamed-answer: plan, reasoning, a tool call with a diff, the answer on the final channel; succeeded", async () => {
    const r = await driveAgent("streamed-answer");
    assert.deepEqual(r.types, [
      "runtime.phase.changed",
      "workspace.ready",
      "harness.starting",
      "harness.ready",
      "session.starting",
      "session.started",
      "runtime.phase.changed",
      "session.capabilities.updated",
      "session.goal.snapshot",
      "turn.submitted",
      "turn.started",
      "plan.updated",
      "item.started",
      "item.delta",
      "tool.execution.started",
      "tool.execution.progressed",
      "tool.execution.completed",
      "workspace.change.updated",
      "plan.updated",
      "item.started",
      "item.delta",
      "item.delta",
      "item.completed",
      "item.completed",
      "turn.completed",
      "run.result.proposed",
      "session.closed",
      "harness.exited",
      "run.terminal",
    ]);
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
    assert.deepEqual(payload(r, "item.completed", 1), {
      kind: "assistant_message",
      text: "I fixed the greeting: the test passes now.",
      channel: "final",
    });
    assert.equal(payload(r, "harness.ready").agent.name, "prp-kit-acp-test-agent");
    // ACP has no session goal: the capability says so, whatever the agent, and there is no goal.
    assert.deepEqual(payload(r, "session.capabilities.updated"), {
      sessionGoals: { availability: "unsupported", actions: [] },
      turnControls: { steering: false, queuedFollowUp: true },
    });
    assert.deepEqual(payload(r, "session.goal.snapshot"), { goal: null });
    assert.deepEqual(payload(r, "workspace.change.updated").files[0], {
      path: "src/greeting.ts",
      changeKind: "modified",
      previousPath: null,
      additions: 1,
      deletions: 1,
    });
    assert.equal(
      payload(r, "harness.exited").exitCode,
      0,
      "the agent exits on its own once the session is closed and stdin ends",
    );
    await noOrphans(r);
  });

  it("permission asked and answered accept → allow_once; the agent reports the option it got", async () => {
    const r = await driveAgent("permission", { answers: [{ action: "accept" }] });
    const request = payload(r, "runtime_request.created").request;
    assert.deepEqual(
      request.choices.map((c: { key: string }) => c.key),
      ["allow", "allow_always", "deny"],
    );
    assert.deepEqual(payload(r, "runtime_request.resolved"), {
      requestId: request.requestId,
      resolution: { optionId: "allow", optionKind: "allow_once", allowed: true },
      decidedBy: { by: "controller" },
    });
    assert.match(payload(r, "item.completed").text, /permission outcome: allow/);
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
    await noOrphans(r);
  });

  it("permission denied by the controller → reject_once", async () => {
    const r = await driveAgent("permission", { answers: [{ action: "decline" }] });
    assert.equal(payload(r, "runtime_request.resolved").resolution.optionKind, "reject_once");
    assert.equal(payload(r, "tool.execution.completed").status, "failed");
    await noOrphans(r);
  });

  it("permission denied by the default policy: the policy's choice is an event", async () => {
    const r = await driveAgent("permission", { policy: "deny" });
    assert.deepEqual(payload(r, "runtime_request.resolved").decidedBy, { by: "policy", policy: "deny" });
    assert.equal(payload(r, "runtime_request.resolved").resolution.optionKind, "reject_once");
    await noOrphans(r);
  });

  it("cancel mid-turn: turn.interrupt → session/cancel → turn.interrupted", async () => {
    const r = await driveAgent("cancel", { onFirstDelta: "turn.interrupt" });
    assert.deepEqual(payload(r, "turn.interrupted"), { reason: "operator", stopReason: "cancelled" });
    assert.deepEqual(states(r), ["interrupted", "cancelled", "turn_interrupted"]);
    await noOrphans(r);
  });

  it("run.cancel mid-turn → turn.cancelled, then the group ends", async () => {
    const r = await driveAgent("cancel", { onFirstDelta: "run.cancel" });
    assert.ok(r.types.includes("turn.cancelled"), r.types.join(", "));
    assert.deepEqual(states(r), ["cancelled", "cancelled", "run_cancelled"]);
    await noOrphans(r);
  });

  it("an agent error → turn.failed with the agent's reason; the run fails", async () => {
    const r = await driveAgent("agent-error");
    assert.equal(payload(r, "turn.failed").code, "agent_internal_error");
    assert.match(payload(r, "turn.failed").message, /model is overloaded/);
    assert.equal(r.of("run.result.proposed").length, 0);
    assert.deepEqual(states(r), ["failed", "failed", "semantic_result_missing"]);
    await noOrphans(r);
  });

  it("authentication required (-32000) → turn.failed: log the agent in", async () => {
    const r = await driveAgent("auth-required");
    assert.equal(payload(r, "turn.failed").code, "authentication_required");
    assert.match(payload(r, "turn.failed").message, /log the agent in/);
    assert.deepEqual(states(r), ["failed", "failed", "harness_process_failed"]);
    assert.deepEqual(
      [r.terminal.stopReason?.kind, r.terminal.stopReason?.code, r.terminal.stopReason?.message],
      ["agent_start", "authentication_required", "the agent needs a login or key: log it in"],
    );
    await noOrphans(r);
  });

  it("a crash mid-turn → turn.failed agent_exited, harness.exited with code 3 and its stderr", async () => {
    const r = await driveAgent("crash");
    assert.equal(payload(r, "turn.failed").code, "agent_exited");
    assert.equal(payload(r, "harness.exited").exitCode, 3);
    assert.ok(payload(r, "harness.exited").log.lines.includes("fatal: out of cheese"));
    assert.deepEqual(states(r), ["failed", "failed", "harness_process_failed"]);
    await noOrphans(r);
  });

  it("malformed updates and an unknown extension become diagnostics; the turn goes on", async () => {
    const r = await driveAgent("malformed-update");
    assert.deepEqual(
      r.of("harness.diagnostic").map((e) => (e.payload as any).code),
      ["acp_update_dropped", "acp_update_dropped", "acp_extension_ignored"],
    );
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
    await noOrphans(r);
  });

  it("an agent that outlives its stdin is ended after its turn: a clean end, not a crash to restart", async () => {
    const r = await driveAgent("linger");
    assert.equal(r.of("harness.ready").length, 1, "no second agent");
    assert.deepEqual([payload(r, "harness.exited").signal, payload(r, "harness.exited").success], ["SIGTERM", true]);
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
    await noOrphans(r);
  });

  it("killed by a signal mid-turn: a replacement agent loads the session (session/load) and finishes the turn", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "prp-acp-killed-"));
    try {
      // The replacement is another process: it finds the session where the first one stored it.
      const r = await driveAgent("killed-once", {
        cwd,
        command: `${testAgentCommand("killed-once")} --session-dir ${join(cwd, "sessions")}`,
      });
      assert.equal(r.of("harness.ready").length, 2, r.types.join(", "));
      assert.deepEqual(
        [payload(r, "harness.exited").signal, payload(r, "harness.exited").restarting],
        ["SIGKILL", true],
      );
      assert.equal(r.of("turn.failed").length, 0, "the turn is carried on, not failed");
      assert.deepEqual(
        r.types.filter((t) => t.startsWith("session.")),
        [
          "session.starting",
          "session.started",
          "session.capabilities.updated",
          "session.goal.snapshot",
          "session.reconciled",
          "session.capabilities.updated",
          "session.goal.snapshot",
          "session.resuming",
          "session.resumed",
        ],
      );
      assert.equal(payload(r, "session.resumed").driverSessionId, payload(r, "session.started").driverSessionId);
      const items = r.of("item.started").map((e) => e.itemId);
      assert.equal(new Set(items).size, items.length, `item ids stay apart across agents: ${items.join(", ")}`);
      assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
      for (const e of r.of("harness.ready")) {
        const pid = (e.payload as Record<string, number>).pid!;
        await until(
          () => liveGroupMembers(pid).length === 0,
          () => `agent group ${pid} gone`,
        );
      }
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("a long stream: 2000 chunks, every one a delta of one item, in order", async () => {
    const r = await driveAgent("long-stream");
    assert.equal(r.of("item.delta").length, 2000);
    assert.equal(payload(r, "item.completed").text, "word ".repeat(2000));
    assert.equal(states(r)[1], "succeeded");
    await noOrphans(r);
  });

  describe("a restarted durable runner's session (openSession with resumeSessionId)", () => {
    /** Starts `scenario`, opens the recorded session, and returns the session facts; the agent is then ended. */
    const openRecorded = async (scenario: string) => {
      const facts: HarnessFact[] = [];
      let ready!: () => void;
      let gone!: () => void;
      const isReady = new Promise<void>((r) => (ready = r));
      const isGone = new Promise<void>((r) => (gone = r));
      const driver = new AcpDriver({
        command: testAgentCommand(scenario),
        cwd: "/tmp",
        permissionPolicy: "deny",
        runId: "run_1",
        sessionId: "session_1",
        graceMs: 200,
      });
      driver.start({
        fact: (f) => {
          facts.push(f);
          if (f.kind === "ready") ready();
        },
        gone: () => gone(),
      });
      let pid = 0;
      try {
        await within(isReady, 20_000, "the agent to answer initialize");
        pid = (facts.find((f) => f.kind === "ready") as { pid: number }).pid;
        driver.openSession({
          normalizedSessionId: "session_1",
          driverSessionId: "driver_session_1",
          resume: true,
          resumeSessionId: "acp_test_session_1",
        });
        await until(
          () =>
            facts.some(
              (f) => f.kind === "event" && f.eventType.startsWith("session.") && f.eventType !== "session.resuming",
            ),
          "a session fact",
        );
      } finally {
        driver.stop();
        await within(isGone, 20_000, "the agent to be gone");
      }
      await until(
        () => liveGroupMembers(pid).length === 0,
        () => `agent group ${pid} gone: ${describeProcesses(liveGroupMembers(pid))}`,
      );
      return facts.flatMap((f) =>
        f.kind === "event" && f.eventType.startsWith("session.")
          ? [[f.eventType, f.payload.code ?? f.payload.driverSessionId]]
          : [],
      );
    };

    it("an agent that does not advertise loadSession: session.failed load_session_unsupported, and no session/new instead", async () => {
      assert.deepEqual(await openRecorded("cancel"), [["session.failed", "load_session_unsupported"]]);
    });

    it("an agent that cannot find the session: session/load is asked, and its error is session.failed", async () => {
      assert.deepEqual(await openRecorded("working"), [
        ["session.resuming", "acp_test_session_1"],
        ["session.failed", "resource_not_found"],
      ]);
    });
  });
});
