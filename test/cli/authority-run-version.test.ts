import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { GOAL_EVENTS } from "../../src/contract/version-gates.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { authorityFolder, killAll, runnerArgs, spawnRunnerd, startDaemon, type Daemon } from "./authority-processes.js";
import { eventLines, judgeRun } from "./authority-run.js";
import { adminJson, runPrp } from "./run-cli.js";

/**
 * `prp authority run create --protocol-version N`: the run is registered for N and the printed
 * prp-runnerd flags offer exactly 1-N, so a runner started with them is admitted; what version
 * the run had is read back from its committed log (goal events exist only from v2).
 */
describe("prp authority run create --protocol-version", () => {
  let dir: string;
  let store: string[];
  const daemons: Daemon[] = [];
  before(() => {
    ({ dir, store } = authorityFolder("prp-run-version-"));
  });
  after(async () => {
    await killAll(daemons);
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a version outside 1-3 as a usage error, says which versions there are, and registers nothing", () => {
    const refused = runPrp(["authority", "run", "create", "--protocol-version", "4", "--run-id", "run_v4", ...store]);
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /expected a protocol version in 1-3, got 4/);
    assert.equal(runPrp(["authority", "runs", "--json", ...store]).stdout.includes("run_v4"), false);
  });

  for (const version of [1, 3]) {
    it(`a run created for v${version} and its runner started with the printed flags: ${version === 1 ? "no goal event in its log (the twin)" : "the goal events in its log"}`, async () => {
      const daemon = await startDaemon([...store, "--poll-ms", "50"]);
      daemons.push(daemon);
      const created = adminJson(store, [
        "authority",
        "run",
        "create",
        "--json",
        "--script",
        "goals",
        "--prompt",
        "Go.",
        "--protocol-version",
        String(version),
      ]) as { runId: string; protocolVersion: number; runnerArgs: string[] };
      assert.equal(created.protocolVersion, version);
      const { ticket } = adminJson(store, ["authority", "ticket", created.runId, "--json"]) as { ticket: string };
      const runner = spawnRunnerd(
        [...runnerArgs(created, daemon.url, join(dir, `runner-${created.runId}`)), ...PATIENT_HARNESS],
        ticket,
        dir,
      );
      assert.equal(await runner.exited(), 0, runner.stderr());
      const events = eventLines(runPrp(["events", "--run", created.runId, "--json", ...store]).stdout);
      assert.deepEqual(judgeRun(events), { runTerminalState: "succeeded", problems: [] });
      const goals = events.filter((e) => GOAL_EVENTS.has(e.eventType)).map((e) => e.eventType);
      if (version === 1) assert.deepEqual(goals, []);
      else
        assert.ok(
          goals.includes("session.capabilities.updated") &&
            goals.includes("session.goal.updated") &&
            goals.includes("session.goal.cleared"),
          goals.join(", "),
        );
      daemon.kill("SIGTERM");
      assert.equal(await daemon.exited(), 0, daemon.stderr());
    });
  }
});
