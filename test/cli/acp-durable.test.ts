import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { DurableRunFacts, FaultStep } from "../../src/fault/durable-run.js";
import { questionId } from "../../src/harness/acp/questions.js";
import type { PermissionPolicy } from "../../src/harness/acp/permissions.js";
import { acpScenariosDir } from "../../src/harness/acp/test-agent-scenario.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { agentLog, agentPids, hostileAgent, noAgentLeft } from "../harness/acp/hostile-agent-support.js";
import { until } from "../support/until.js";
import { durableAgentRun, onEvent, states } from "./acp-durable-support.js";

describe("ACP agents in durable mode: every scenario through the authority", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-acp-durable-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Every scenario that ran here: the last test checks that none was left out. */
  const ran = new Set<string>();
  /** `agent`: another agent than the scenario's test agent, and its cwd. */
  const run = async (
    scenario: string,
    policy: PermissionPolicy = "deny",
    faults: FaultStep[] = [],
    agentArgs = "",
    agent: { command?: string; cwd?: string; idleMs?: number } = {},
  ) => {
    ran.add(scenario);
    return durableAgentRun(dir, {
      command: agent.command ?? `${testAgentCommand(scenario)}${agentArgs}`,
      cwd: agent.cwd ?? dir,
      policy,
      faults,
      ...(agent.idleMs ? { idleMs: agent.idleMs } : {}),
    });
  };

  it("streamed-answer succeeds; the run snapshot says so", async () => {
    const r = await run("streamed-answer");
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
    assert.equal(r.payload("item.completed").channel, undefined, "the reasoning item is not on the final channel");
    assert.equal(r.stored.filter((e) => e.eventType === "item.completed").at(-1)!.payload.channel, "final");
    assert.equal(
      (r.facts.run as DurableRunFacts["run"] & { runTerminalState?: string })?.runTerminalState ?? "succeeded",
      "succeeded",
    );
    // The tool call's item id travels on the envelope (providerItemId); its closed payloads are the projection's, untouched.
    const tools = r.stored.filter(
      (e) => e.eventType.startsWith("tool.execution.") || e.eventType === "workspace.change.updated",
    );
    assert.deepEqual(
      [...new Set(tools.map((e) => (e as { providerItemId?: string }).providerItemId))],
      ["tool_call_edit_1"],
      tools.map((e) => e.eventType).join(", "),
    );
    assert.equal(tools.length, 4);
  });

  it("permission asked and answered by the authority: accept → allow_once", async () => {
    const r = await run("permission", "ask", [
      onEvent("runtime_request.created", "request.resolve", (e) => ({
        requestId: (e.payload as any).request.requestId,
        turnId: e.turnId,
        resolution: { action: "accept" },
      })),
    ]);
    assert.deepEqual(r.payload("runtime_request.resolved").resolution, {
      optionId: "allow",
      optionKind: "allow_once",
      allowed: true,
    });
    assert.equal(states(r)[1], "succeeded");
  });

  it("an allowed permission: the authority commits the input and result receipts, correlated to exactly the run's identity", async () => {
    const r = await run("permission", "ask", [
      onEvent("runtime_request.created", "request.resolve", (e) => ({
        requestId: (e.payload as any).request.requestId,
        turnId: e.turnId,
        resolution: { action: "accept" },
      })),
    ]);
    const input = r.event("semantic_tool.input");
    const correlation = (input.payload as any).semantic_tool.correlation;
    // The authority refuses an input whose correlation is not the run's: its being committed is the check; the ids say which.
    assert.deepEqual(correlation, {
      runId: input.runId,
      normalizedSessionId: input.normalizedSessionId,
      turnId: input.turnId,
      itemId: input.itemId,
    });
    assert.match(String(correlation.itemId), /^item_/);
    assert.equal((r.payload("semantic_tool.result") as any).semantic_tool.outcome, "succeeded");
    assert.equal(r.payload("semantic_tool.input").providerItemId, undefined, "the receipt sits on the run's own item");
    assert.equal(r.terminal.reportedWorkDisposition, "needs_review");
  });

  it("a question answered by the authority with request.resolve submit: the agent echoes the content", async () => {
    const response = {
      schema: "paperclip.question_response.v1",
      answers: {
        [questionId(1, "deploy_target")]: { selectedOptionIds: ["option-2"] },
        [questionId(2, "preferred_name")]: { text: "Lin" },
      },
    };
    const r = await run("question", "ask", [
      onEvent("runtime_request.created", "request.resolve", (e) => ({
        requestId: (e.payload as any).request.requestId,
        turnId: e.turnId,
        resolution: { action: "submit", response },
      })),
    ]);
    assert.equal(r.payload("runtime_request.created").request.schema, "paperclip.runtime_request.v2");
    assert.equal(
      r.payload("runtime_request.created").request.turnId,
      r.event("runtime_request.created").turnId,
      "the question names the run's turn",
    );
    assert.deepEqual(r.payload("runtime_request.resolved").resolution, {
      action: "accept",
      content: { deploy_target: "production", preferred_name: "Lin" },
    });
    assert.match(r.payload("run.result.proposed").summary, /question answer: accept/);
    assert.equal(states(r)[1], "succeeded");
  });

  it("a question under the deny policy is cancelled, as an event", async () => {
    const r = await run("question", "deny");
    assert.deepEqual(r.payload("runtime_request.cancelled").decidedBy, { by: "policy", policy: "deny" });
  });

  it("forbid: a permission request fails the run closed with request_forbidden", async () => {
    const r = await run("permission", "forbid");
    assert.deepEqual(
      [...states(r), r.terminal.stopReason.code],
      ["failed", "failed", "harness_protocol_violation", "request_forbidden"],
    );
  });

  it("permission denied by policy", async () => {
    const r = await run("permission", "deny");
    assert.deepEqual(r.payload("runtime_request.resolved").decidedBy, { by: "policy", policy: "deny" });
  });

  for (const scenario of ["cancel", "working"]) {
    it(`${scenario}: turn.interrupt from the authority mid-turn → turn.interrupted`, async () => {
      const r = await run(scenario, "deny", [
        onEvent("item.delta", "turn.interrupt", (e) => ({ reason: "operator", turnId: e.turnId })),
      ]);
      assert.deepEqual(states(r), ["interrupted", "cancelled", "turn_interrupted"]);
    });
  }

  it("killed-once: the agent dies by a signal mid-turn; the runner starts another, which loads the session and finishes the turn", async () => {
    const r = await run("killed-once", "deny", [], ` --session-dir ${join(dir, "killed-once-sessions")}`);
    assert.equal(r.types.filter((t) => t === "harness.ready").length, 2, r.types.join(", "));
    assert.deepEqual(
      r.stored.filter((e) => e.eventType === "session.resumed").map((e) => (e.payload as any).driverSessionId),
      [r.payload("session.started").driverSessionId],
    );
    assert.equal(r.types.includes("turn.failed"), false, "the turn is carried on");
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
  });

  it("linger: an agent that outlives its stdin is ended after its turn, and the run succeeds", async () => {
    const r = await run("linger");
    assert.deepEqual([r.payload("harness.exited").signal, r.payload("harness.exited").success], ["SIGTERM", true]);
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
  });

  for (const [scenario, code] of [
    ["agent-error", "agent_internal_error"],
    ["auth-required", "authentication_required"],
    ["crash", "agent_exited"],
  ] as const) {
    it(`${scenario}: turn.failed ${code}, the run failed`, async () => {
      const r = await run(scenario);
      assert.equal(r.payload("turn.failed").code, code);
      assert.equal(states(r)[1], "failed");
    });
  }

  it("malformed-update: diagnostics, then success", async () => {
    const r = await run("malformed-update");
    assert.equal(r.types.filter((t) => t === "harness.diagnostic").length, 3);
    assert.equal(states(r)[1], "succeeded");
  });

  it("long-stream: every chunk reaches the authority (deltas may be coalesced, the text is whole)", async () => {
    const r = await run("long-stream");
    const text = r.stored
      .filter((e) => e.eventType === "item.delta")
      .map((e) => (e.payload as any).text)
      .join("");
    assert.equal(text, "word ".repeat(2000));
    assert.equal(r.payload("item.completed").text, "word ".repeat(2000));
  });

  /** A follow-up queued through the authority as soon as the agent's first answer is committed. */
  const steer = (text: string) => onEvent("item.delta", "turn.steer", () => ({ text }));
  const answers = (r: Awaited<ReturnType<typeof run>>) =>
    r.stored.filter((e) => e.eventType === "item.completed").map((e) => String((e.payload as any).text));

  it("follow-up: a turn.steer queued through the authority is sent as the turn's next prompt; one turn, one terminal", async () => {
    const r = await run("follow-up", "deny", [steer("Also update the docs.")]);
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
    assert.ok(
      answers(r).some((t) => t.includes("you said: Also update the docs.")),
      `the agent answered the follow-up: ${answers(r).join(" | ")}`,
    );
    for (const type of ["turn.started", "turn.completed", "run.terminal"])
      assert.equal(r.stored.filter((e) => e.eventType === type).length, 1, `exactly one ${type}`);
  });

  it("follow-up-error: the prompt fails with a follow-up queued; it is dropped with a diagnostic and the turn fails once", async () => {
    const r = await run("follow-up-error", "deny", [steer("Also update the docs.")]);
    assert.equal(states(r)[1], "failed");
    assert.ok(
      r.stored.some((e) => e.eventType === "harness.diagnostic" && (e.payload as any).code === "acp_follow_up_dropped"),
      "the dropped follow-up is said in a diagnostic",
    );
    assert.ok(!answers(r).some((t) => t.includes("Also update the docs.")), "the follow-up never reached the agent");
    assert.equal(r.stored.filter((e) => e.eventType === "turn.failed").length, 1, "the turn fails once");
  });

  /** A hostile agent's own cwd and log. */
  const hostile = (mode: string) => {
    const cwd = join(dir, mode);
    mkdirSync(cwd);
    const log = join(cwd, "agent.log");
    return { cwd, log, command: hostileAgent(mode, log) };
  };

  it("bait-and-switch: the authority's allow for the dead agent's request is never delivered to its replacement's request with the same JSON-RPC id", async () => {
    const agent = hostile("bait-switch");
    const baitAndSwitch: FaultStep = {
      afterEvents: 1,
      act: async (ctx) => {
        const created = () => ctx.committed().filter((e) => e.eventType === "runtime_request.created");
        await until(() => created().length === 2, "both agents' permission requests committed");
        const first = created()[0]!;
        await ctx.authority.queueCommand(ctx.runId, "request.resolve", {
          requestId: (first.payload as any).request.requestId,
          turnId: first.turnId,
          resolution: { action: "accept" },
        });
        await ctx.authority.queueCommand(ctx.runId, "run.cancel", { reason: "operator" });
      },
    };
    const r = await run("bait-switch", "ask", [baitAndSwitch], "", agent);
    const created = r.stored
      .filter((e) => e.eventType === "runtime_request.created")
      .map((e) => (e.payload as any).request);
    assert.deepEqual(
      created.map((q) => q.prompt),
      ["Allow Read README.md?", "Allow run rm -rf ~?"],
    );
    assert.notEqual(created[0].requestId, created[1].requestId);
    const ended = (type: string) => r.stored.filter((e) => e.eventType === type).map((e) => e.payload as any);
    assert.ok(
      ended("runtime_request.cancelled").some((c) => c.requestId === created[0].requestId),
      "the dead agent's request is cancelled",
    );
    assert.deepEqual(
      ended("runtime_request.resolved").filter((p) => p.resolution?.allowed === true),
      [],
      "nothing was allowed",
    );
    const answered = new Set(
      [...ended("runtime_request.resolved"), ...ended("runtime_request.cancelled")].map((p) => p.requestId),
    );
    assert.deepEqual(
      created.filter((q) => !answered.has(q.requestId)),
      [],
      "no request left pending",
    );
    assert.equal(
      agentLog(agent.log).filter((l) => l.includes('"optionId":"allow"')).length,
      0,
      "the replacement was never told allow",
    );
    assert.equal(agentPids(agent.log).length, 2);
    await noAgentLeft(agent.log);
  });

  it("an agent slow to cancel: the interrupted turn stays interrupted; no replacement agent, the prompt sent once", async () => {
    const agent = hostile("slow-cancel");
    const r = await run(
      "slow-cancel",
      "deny",
      [onEvent("item.delta", "turn.interrupt", (e) => ({ reason: "operator", turnId: e.turnId }))],
      "",
      agent,
    );
    assert.equal(agentPids(agent.log).length, 1, agentLog(agent.log).join(", "));
    assert.equal(agentLog(agent.log).filter((l) => l === "session/prompt").length, 1);
    assert.equal(r.types.filter((t) => t === "harness.ready").length, 1);
    assert.deepEqual(states(r), ["interrupted", "cancelled", "turn_interrupted"]);
    await noAgentLeft(agent.log);
  });

  for (const [mode, code, idleMs] of [
    ["silent-prompt", "agent_timeout", 500],
    ["close-stdout", "agent_stdout_closed", undefined],
    ["endless-line", "agent_line_too_long", undefined],
  ] as const) {
    it(`${mode}: the hang ends the durable run with ${code}, and no agent process is left`, async () => {
      const agent = hostile(mode);
      const r = await run(mode, "deny", [], "", { ...agent, ...(idleMs ? { idleMs } : {}) });
      assert.deepEqual(
        [...states(r), r.terminal.stopReason?.code],
        ["failed", "failed", "harness_protocol_violation", code],
      );
      assert.equal(agentPids(agent.log).length, 1, "no replacement agent");
      await noAgentLeft(agent.log);
    });
  }

  it("every test-agent scenario ran in durable mode here", () => {
    const all = readdirSync(acpScenariosDir())
      .filter((f) => f.endsWith(".json"))
      .map((f) => f.slice(0, -".json".length));
    assert.deepEqual(
      all.filter((s) => !ran.has(s)),
      [],
    );
  });
});
