import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { agentRunnerdArgs } from "../../src/cli/agent-options.js";
import { runDurable } from "../../src/fault/durable-run.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { CANARIES, SECRET_MARK, writeSecretsScenario } from "../harness/acp/leaky-agents.js";

/** Every file under `dir`, recursively: the run's state on disk. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );

describe("ACP redaction in durable mode: the bytes on disk", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-acp-redaction-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("credentials an agent sends through every channel are in no file of the authority's or the runner's state", async () => {
    const scenario = writeSecretsScenario(dir);
    const facts = await runDurable({
      agent: {
        runnerdArgs: agentRunnerdArgs({
          agent: { command: testAgentCommand(scenario) },
          permissionPolicy: "allow-reads",
          agentCwd: dir,
        }),
        prompt: "Fix the failing test.",
      },
      dir: join(dir, "runs"),
      ticketTtlMs: 60_000,
    });
    const terminal = facts.events.at(-1)!;
    assert.equal(terminal.eventType, "run.terminal", `runner logs:\n${facts.runnerLogs.flat().join("\n")}`);
    assert.equal((terminal.payload as Record<string, unknown>).runTerminalState, "succeeded");
    const committed = JSON.stringify(facts.events);
    for (const canary of CANARIES) assert.ok(committed.includes(canary), `${canary} was committed`);
    const files = filesUnder(join(dir, "runs"));
    assert.ok(
      files.some((f) => f.endsWith(".sqlite") || f.endsWith(".db")),
      `the state databases are among the files scanned: ${files.join(", ")}`,
    );
    const mark = Buffer.from(SECRET_MARK);
    assert.deepEqual(
      files.filter((f) => readFileSync(f).includes(mark)),
      [],
      "no file holds a secret",
    );
    assert.ok(!facts.runnerLogs.flat().some((line) => line.includes(SECRET_MARK)), "nor does a runner's log");
  });
});
