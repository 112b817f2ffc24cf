import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalDigest } from "../../../src/contract/digest.js";
import { questionId } from "../../../src/harness/acp/questions.js";
import { liveGroupMembers, describeProcesses } from "../../support/processes.js";
import { until } from "../../support/until.js";
import { driveAgent, type Driven } from "./drive-agent.js";

const payload = (r: Driven, type: string, i = 0) => r.of(type)[i]!.payload as Record<string, any>;
const states = (r: Driven) => [
  r.terminal.turnTerminalState,
  r.terminal.runTerminalState,
  r.terminal.reconciliation.reason,
  r.terminal.reportedWorkDisposition,
];
const answerText = (r: Driven) =>
  String(
    r
      .of("item.completed")
      .map((e) => (e.payload as Record<string, unknown>).text)
      .at(-1),
  );

async function noOrphans(r: Driven): Promise<void> {
  const pid = payload(r, "harness.ready").pid as number;
  await until(
    () => liveGroupMembers(pid).length === 0,
    () => `the agent group ${pid} to be gone: ${describeProcesses(liveGroupMembers(pid))}`,
  );
}

/** The `question` scenario's form: wire.md §11.4 ids. */
const Q = {
  target: questionId(1, "deploy_target"),
  name: questionId(2, "preferred_name"),
  retries: questionId(3, "retries"),
};
const submit = (answers: Record<string, unknown>) => ({
  action: "submit",
  response: { schema: "paperclip.question_response.v1", answers },
});

describe("seed 002 through the ACP driver, against the SDK test agent (local)", () => {
  it("rule 3: an allowed tool call gets its input receipt right after the allow, and one result when it completes", async () => {
    const r = await driveAgent("permission", { answers: [{ action: "accept" }] });
    const resolvedAt = r.types.indexOf("runtime_request.resolved");
    assert.equal(r.types[resolvedAt + 1], "semantic_tool.input");
    const input = payload(r, "semantic_tool.input");
    assert.deepEqual(input.input, { command: "npm install" });
    assert.deepEqual(input.semantic_tool.content, {
      digest: canonicalDigest({ command: "npm install" }),
      redactionDisposition: "none",
      references: [],
    });
    assert.equal(input.semantic_tool.callId, "call_exec_1");
    assert.equal(r.of("semantic_tool.result").length, 1);
    assert.ok(r.types.indexOf("semantic_tool.result") > r.types.indexOf("tool.execution.completed"));
    assert.deepEqual(
      [
        payload(r, "semantic_tool.result").semantic_tool.outcome,
        payload(r, "semantic_tool.result").semantic_tool.auditReceiptId,
      ],
      ["succeeded", payload(r, "runtime_request.created").request.requestId],
    );
    await noOrphans(r);
  });

  it("rule 3: a denied permission gets no receipt", async () => {
    const r = await driveAgent("permission", { answers: [{ action: "decline" }] });
    assert.deepEqual(
      r.types.filter((t) => t.startsWith("semantic_tool.")),
      [],
    );
    await noOrphans(r);
  });

  it("rule 6: the agent's end_turn proposes needs_review, not done; the run still succeeds", async () => {
    const r = await driveAgent("streamed-answer");
    assert.equal(payload(r, "run.result.proposed").reportedWorkDisposition, "needs_review");
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result", "needs_review"]);
  });

  it("rules 4-5: a form question → a question set; the controller's answer reaches the agent as accept with content", async () => {
    const r = await driveAgent("question", {
      answers: [
        submit({
          [Q.target]: { selectedOptionIds: ["option-2"] },
          [Q.name]: { text: "Ada" },
          [Q.retries]: { text: "3" },
        }),
      ],
    });
    const request = payload(r, "runtime_request.created").request;
    assert.equal(request.schema, "paperclip.runtime_request.v2");
    assert.deepEqual(
      request.input.questions.map((q: { id: string; answerMode: string }) => [q.id, q.answerMode]),
      [
        [Q.target, "single_select"],
        [Q.name, "text"],
        [Q.retries, "text"],
      ],
    );
    assert.deepEqual(payload(r, "runtime_request.created").providerRequest, { id: 0, method: "elicitation/create" });
    assert.deepEqual(payload(r, "runtime_request.resolved").resolution, {
      action: "accept",
      content: { deploy_target: "production", preferred_name: "Ada", retries: 3 },
    });
    assert.match(
      answerText(r),
      /question answer: accept \{"deploy_target":"production","preferred_name":"Ada","retries":3\}/,
    );
    assert.equal(states(r)[1], "succeeded");
    await noOrphans(r);
  });

  it("rule 4: answers are validated: an unknown question id and a non-integer are rejected with typed receipts, a valid answer then goes through", async () => {
    const r = await driveAgent("question", {
      answers: [
        submit({
          [Q.target]: { selectedOptionIds: ["option-1"] },
          [Q.name]: { text: "Ada" },
          "field-9-nope-000000000000": { text: "x" },
        }),
        submit({
          [Q.target]: { selectedOptionIds: ["option-1"] },
          [Q.name]: { text: "Ada" },
          [Q.retries]: { text: "three" },
        }),
        submit({ [Q.target]: { selectedOptionIds: ["option-7"] }, [Q.name]: { text: "Ada" } }),
        submit({ [Q.target]: { selectedOptionIds: ["option-1"] }, [Q.name]: { text: "Ada" } }),
      ],
    });
    const rejected = r.receipts.filter((x) => x.type === "request.resolve" && x.status === "rejected");
    assert.deepEqual(
      rejected.map((x) => x.code),
      ["binding_mismatch", "binding_mismatch", "binding_mismatch"],
    );
    assert.match(String(rejected[0]!.reason), /unknown question ID "field-9-nope/);
    assert.match(String(rejected[1]!.reason), /not an integer/);
    assert.match(String(rejected[2]!.reason), /option "option-7" does not belong/);
    assert.match(answerText(r), /question answer: accept \{"deploy_target":"staging","preferred_name":"Ada"\}/);
    await noOrphans(r);
  });

  it("rule 4: decline → decline", async () => {
    const r = await driveAgent("question", { answers: [{ action: "decline" }] });
    assert.deepEqual(payload(r, "runtime_request.resolved").resolution, { action: "decline" });
    assert.match(answerText(r), /question answer: decline$/);
    await noOrphans(r);
  });

  it("rule 4: without a controller the policy decides: deny cancels the question, as an event", async () => {
    const r = await driveAgent("question", { policy: "deny" });
    assert.deepEqual(payload(r, "runtime_request.cancelled"), {
      requestId: "acp_question_0",
      reason: "cancelled",
      decidedBy: { by: "policy", policy: "deny" },
    });
    assert.match(answerText(r), /question answer: cancel$/);
    await noOrphans(r);
  });

  it("rule 4: an interrupt while a question is open answers it cancel, and the turn is interrupted", async () => {
    const r = await driveAgent("question", { onFirstRequest: "turn.interrupt" });
    assert.equal(payload(r, "runtime_request.cancelled").requestId, "acp_question_0");
    assert.deepEqual(states(r).slice(0, 2), ["interrupted", "cancelled"]);
    await noOrphans(r);
  });

  for (const scenario of ["permission", "question"]) {
    it(`rule 9: under --permission-policy forbid the ${scenario} request fails the run closed with request_forbidden`, async () => {
      const r = await driveAgent(scenario, { policy: "forbid" });
      assert.deepEqual(states(r).slice(0, 3), ["failed", "failed", "harness_protocol_violation"]);
      assert.equal(r.terminal.stopReason.code, "request_forbidden");
      assert.equal(r.of("runtime_request.created").length, 0, "nothing was asked");
      assert.equal(r.of("run.result.proposed").length, 0);
      await noOrphans(r);
    });
  }
});
