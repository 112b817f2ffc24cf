import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, describe, it } from "node:test";
import { Command, CommanderError } from "commander";
import { CATALOG_ENV } from "../../src/agents/catalog.js";
import {
  agentChoice,
  agentFlagsOf,
  agentRunnerdArgs,
  permissionPolicyOption,
  withAgentOptions,
  type AgentOptionValues,
} from "../../src/cli/agent-options.js";
import { writeTestAgentCatalog } from "../support/user-catalog.js";

/** Parses a controller's agent flags as `prp run` does; a usage error is thrown, not an exit. */
function choose(args: string[]) {
  const program = new Command().exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  const command = withAgentOptions(program, "instead of --script", permissionPolicyOption("deny", "policy"));
  command.parse(["node", "prp", ...args]);
  return agentChoice(program, command.opts<AgentOptionValues>());
}

const usageError = (args: string[]): CommanderError => {
  try {
    choose(args);
  } catch (err) {
    if (err instanceof CommanderError) return err;
    throw err;
  }
  assert.fail(`${args.join(" ")} was accepted`);
};

describe("--agent NAME and --agent-command CMD", () => {
  const dir = mkdtempSync(join(tmpdir(), "prp-agent-options-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("resolves a catalog name to the runner's --agent NAME --agents-dir DIR", () => {
    const agent = choose(["--agent", "claude", "--agents-dir", dir]);
    assert.deepEqual(agent, { name: "claude", agentsDir: resolve(dir) });
    const args = agentRunnerdArgs({ agent: agent!, permissionPolicy: "deny", agentCwd: dir });
    assert.deepEqual(args.slice(0, 4), ["--agent", "claude", "--agents-dir", resolve(dir)]);
    assert.ok(!args.includes("--agent-command") && !args.includes("--harness"), "the runner implies acp");
  });

  it("passes every agent option given on to the runner, --agent-model among them", () => {
    const program = new Command().exitOverride();
    const command = withAgentOptions(program, "instead of --script", permissionPolicyOption("deny", "policy"));
    command.parse(["node", "prp", "--agent", "gemini", "--agent-model", "gemini-2.5-pro", "--agent-idle-ms", "9000"]);
    const opts = command.opts<AgentOptionValues>();
    const args = agentRunnerdArgs(agentFlagsOf(agentChoice(program, opts)!, opts, "ask"));
    for (const [flag, value] of [
      ["--agent-model", "gemini-2.5-pro"],
      ["--agent-idle-ms", "9000"],
      ["--permission-policy", "ask"],
    ])
      assert.equal(args[args.indexOf(flag) + 1], value, `${flag} ${value} in ${args.join(" ")}`);
  });

  it("passes a command line through as before", () => {
    const agent = choose(["--agent-command", "my-agent --acp", "--agent-env", "K=v"]);
    assert.deepEqual(agent, { command: "my-agent --acp" });
    assert.deepEqual(agentRunnerdArgs({ agent: agent!, permissionPolicy: "deny", agentCwd: dir }).slice(0, 4), [
      "--harness",
      "acp",
      "--agent-command",
      "my-agent --acp",
    ]);
  });

  it("refuses an unknown name with exit 2, listing the catalog's names and pointing at --agent-command", () => {
    const err = usageError(["--agent", "npx -y @zed-industries/claude-code-acp"]);
    assert.equal(err.exitCode, 2);
    assert.match(err.message, /the catalog has claude, codex, gemini, opencode/);
    assert.match(err.message, /--agent-command/);
  });

  it("refuses --agent with --agent-command, and --agents-dir without a name", () => {
    assert.match(usageError(["--agent", "claude", "--agent-command", "x"]).message, /cannot be used with/);
    assert.match(usageError(["--agent-command", "x", "--agents-dir", dir]).message, /--agents-dir goes with --agent/);
  });

  it("knows the user's catalog (PRP_AGENT_CATALOG) as well as the built-in one", () => {
    const before = process.env[CATALOG_ENV];
    process.env[CATALOG_ENV] = writeTestAgentCatalog(dir, "streamed-answer");
    try {
      assert.deepEqual(choose(["--agent", "sdk-test", "--agents-dir", dir]), {
        name: "sdk-test",
        agentsDir: resolve(dir),
      });
      assert.match(usageError(["--agent", "sdk"]).message, /claude, codex, gemini, opencode, sdk-test/);
    } finally {
      if (before === undefined) delete process.env[CATALOG_ENV];
      else process.env[CATALOG_ENV] = before;
    }
  });
});
