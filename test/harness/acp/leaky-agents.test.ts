import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { driveAgent, testAgentCommand } from "./drive-agent.js";
import { CANARIES, SECRET_MARK, writeDeepAgent, writeSecretsScenario } from "./leaky-agents.js";

type Obj = Record<string, any>;
const EMOJI = "😀";

describe("an untrusted ACP agent, through the driver and the local runner", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-hostile-agent-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("credentials sent through every channel are absent from the run's record; what travels beside them arrives", async () => {
    const run = await driveAgent("secrets", {
      command: testAgentCommand(writeSecretsScenario(dir)),
      policy: "allow-reads",
    });
    const record = run.lines.join("\n");
    assert.equal(run.terminal.runTerminalState, "succeeded", record.slice(-2000));
    for (const canary of CANARIES) assert.ok(record.includes(canary), `${canary} reached an event`);
    const leaks = run.lines.filter((line) => line.includes(SECRET_MARK));
    assert.deepEqual(leaks, [], "no line of the record carries a secret");
    // The one place the schema has for it says so.
    const input = run.of("semantic_tool.input")[0]!.payload as Obj;
    assert.equal(input.semantic_tool.content.redactionDisposition, "redacted");
    assert.equal(input.input.path, "canary-path");
    assert.ok(
      run.of("harness.exited").some((e) => JSON.stringify(e.payload).includes("Authorization: [redacted]")),
      "the agent's stderr tail is redacted, not dropped",
    );
  });

  for (const where of ["initialize", "prompt"] as const) {
    it(`a JSON line nested 32,000 deep (${where === "initialize" ? "as the initialize answer" : "inside the turn"}) ends the run with a typed protocol violation, not a stack overflow`, async () => {
      const run = await driveAgent(`deep-${where}`, { command: `${process.execPath} ${writeDeepAgent(dir)} ${where}` });
      assert.equal(run.terminal.runTerminalState, "failed");
      assert.equal(run.terminal.reconciliation.reason, "harness_protocol_violation");
      assert.equal(run.terminal.stopReason?.code, "protocol_error");
      assert.match(run.terminal.stopReason?.message ?? "", /nested deeper than the 64-level limit/);
      assert.doesNotMatch(run.lines.join("\n"), /RangeError|call stack/);
    });
  }

  it("texts with an emoji across every cut point: the run succeeds and nothing is refused", async () => {
    const cut = (n: number) => `${"x".repeat(n - 1)}${EMOJI}`; // the emoji's first half is unit n
    const update = (u: Obj) => ({
      kind: "raw",
      message: { jsonrpc: "2.0", method: "session/update", params: { sessionId: "acp_test_session_1", update: u } },
    });
    const scenario = {
      schema: "prp_kit.acp_test_agent.scenario.v1",
      name: "emoji-cuts",
      description: "an emoji across each cut point",
      steps: [
        update({ sessionUpdate: "tool_call", toolCallId: "call_1", title: cut(4000), kind: "read", status: "pending" }),
        update({ sessionUpdate: "tool_call_update", toolCallId: "call_1", status: "completed" }),
        update({ sessionUpdate: "plan", entries: [{ content: cut(4000), priority: "high", status: "pending" }] }),
        update({ sessionUpdate: "notice", severity: "info", title: cut(4000) }),
        { kind: "raw", message: { jsonrpc: "2.0", method: `_vendor/${cut(160 - "_vendor/".length)}`, params: {} } },
        // The answer: an emoji across the run result's 12,000-unit summary cut and, 65,536 units in, the item's text cut.
        update({
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: `${cut(12_000)}${"x".repeat(20_000)}` },
        }),
        update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: cut(65_536 - 32_001) } }),
      ],
    };
    const path = join(dir, "emoji-cuts.json");
    writeFileSync(path, JSON.stringify(scenario));
    const run = await driveAgent("emoji-cuts", { command: testAgentCommand(path) });
    assert.equal(run.terminal.runTerminalState, "succeeded", JSON.stringify(run.terminal));
    assert.deepEqual(
      run.of("runner.diagnostic").map((e) => (e.payload as Obj).code),
      [],
      "no event refused",
    );
    const texts = [
      (run.of("tool.execution.started")[0]!.payload as Obj).name,
      (run.of("plan.updated")[0]!.payload as Obj).steps[0].body,
      (run.of("provider.notice.recorded")[0]!.payload as Obj).summary,
      (run.of("run.result.proposed")[0]!.payload as Obj).summary,
      (run.of("item.completed").at(-1)!.payload as Obj).text,
    ];
    assert.deepEqual(
      texts.map((t: string) => t.length),
      [3999, 3999, 3999, 11_999, 65_535],
      "each text cut before the emoji, not inside it",
    );
    assert.ok(run.of("harness.diagnostic").some((e) => (e.payload as Obj).code === "acp_extension_ignored"));
  });
});
