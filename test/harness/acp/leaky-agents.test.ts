import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { driveAgent, testAgentCommand } from "./drive-agent.js";
import {
  CANARIES,
  SECRET_MARK,
  judgeEmojiCuts,
  writeDeepAgent,
  writeEmojiScenario,
  writeSecretsScenario,
} from "./leaky-agents.js";
import { ranSandboxed } from "./pid-namespace.js";

type Obj = Record<string, any>;

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
    it(`a JSON line nested 32,000 deep (${where === "initialize" ? "as the initialize answer" : "inside the turn"}; sandbox on) ends the run with a typed protocol violation, not a stack overflow`, async () => {
      const cwd = mkdtempSync(join(dir, `deep-${where}-`));
      const log = join(cwd, "agent.log");
      const run = await driveAgent(`deep-${where}`, {
        command: `${process.execPath} ${writeDeepAgent(cwd)} ${where} ${log}`,
        cwd,
        sandbox: true,
      });
      assert.equal(run.terminal.runTerminalState, "failed");
      assert.equal(run.terminal.reconciliation.reason, "harness_protocol_violation");
      assert.equal(run.terminal.stopReason?.code, "protocol_error");
      assert.match(run.terminal.stopReason?.message ?? "", /nested deeper than the 64-level limit/);
      assert.doesNotMatch(run.lines.join("\n"), /RangeError|call stack/);
      assert.ok(ranSandboxed(log), "the agent ran in a PID namespace of its own");
    });
  }

  it("texts with an emoji across every cut point: the run succeeds and nothing is refused", async () => {
    const run = await driveAgent("emoji-cuts", { command: testAgentCommand(writeEmojiScenario(dir)) });
    judgeEmojiCuts(run.events);
  });
});
