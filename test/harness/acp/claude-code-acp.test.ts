import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { launchCommand } from "../../../src/agents/launch.js";
import { installedProfile, TEST_AGENTS_DIR } from "../../support/agents-cache.js";
import { describeProcesses, liveGroupMembers } from "../../support/processes.js";
import { until } from "../../support/until.js";
import { driveAgent } from "./drive-agent.js";

/**
 * A real peer: @zed-industries/claude-code-acp, the catalog's `claude`, as `prp agents install`
 * put it in the tests' agents folder (npm ci does), offline and without
 * credentials (an empty HOME, and the driver passes no other variable). It must answer
 * initialize and session/new, and the prompt must end the run failed with the authentication
 * reason — no hang, no orphan.
 */
describe("the real claude-code-acp, offline and logged out", () => {
  let home: string;
  before(() => {
    home = mkdtempSync(join(tmpdir(), "prp-claude-home-"));
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  it("initialize and session/new succeed; the prompt fails: authentication required; the run fails; nothing outlives it", async () => {
    const command = launchCommand(installedProfile("claude"), TEST_AGENTS_DIR);
    assert.ok(command.ok, command.ok ? "" : command.error.message);
    const r = await driveAgent("claude-code-acp", { command: command.value, env: { HOME: home } });
    const ready = r.of("harness.ready");
    assert.equal(ready.length, 1, "one agent, not restarted");
    const agent = (ready[0]!.payload as Record<string, any>).agent;
    assert.deepEqual([agent.protocol, agent.name, agent.version], ["acp", "@zed-industries/claude-code-acp", "0.16.2"]);
    assert.equal(r.of("session.started").length, 1, `session/new succeeded: ${r.types.join(", ")}`);
    const failed = r.of("turn.failed")[0]?.payload as Record<string, any> | undefined;
    assert.equal(failed?.code, "authentication_required", r.types.join(", "));
    assert.match(failed!.message, /^authentication required: log the agent in/);
    assert.deepEqual([r.terminal.turnTerminalState, r.terminal.runTerminalState], ["failed", "failed"]);
    const pid = (ready[0]!.payload as Record<string, number>).pid!;
    await until(
      () => liveGroupMembers(pid).length === 0,
      () => `no live process in claude-code-acp's group ${pid}: ${describeProcesses(liveGroupMembers(pid))}`,
    );
  });
});
