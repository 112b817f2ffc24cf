import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, describe, it } from "node:test";
import { liveRunProcesses, runSurvivors } from "../../src/fault/run-processes.js";
import { ORPHAN_GUARD_NAME } from "../../src/harness/orphan-guard.js";
import { isLive } from "../support/processes.js";
import { until } from "../support/until.js";

/**
 * The fault verdict's survivor check reads /proc: what works in the run's
 * directory, what is in a runner's or a reported harness's group, and an orphan guard a runner
 * of the run started, are the run's; anything else is not.
 */
describe("liveRunProcesses finds what a run left running, through /proc", () => {
  let root: string;
  let dir: string;
  const started: ChildProcess[] = [];
  const sleeper = (options: { cwd?: string; detached?: boolean; argv0?: string[] } = {}) => {
    const child = options.argv0
      ? spawn("/bin/sh", ["-c", "sleep 60; exit 0", ...options.argv0], {
          cwd: options.cwd ?? "/",
          detached: options.detached ?? false,
          stdio: "ignore",
        })
      : spawn("sleep", ["60"], { cwd: options.cwd ?? "/", detached: options.detached ?? false, stdio: "ignore" });
    started.push(child);
    return child.pid!;
  };
  before(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "prp-run-processes-")));
    dir = join(root, "run_1");
    mkdirSync(join(dir, "runner-state"), { recursive: true });
    mkdirSync(join(root, "run_10"));
  });
  /** Each test ends its own sleepers (by pid), so the next one sees only its own. */
  afterEach(async () => {
    for (const child of started.splice(0)) {
      if (child.pid && isLive(child.pid)) child.kill("SIGKILL");
      await until(() => !isLive(child.pid!), `sleeper ${child.pid} to end`);
    }
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("reports a process working in the run's directory or below, and not one in a sibling whose name extends it", async () => {
    const inside = sleeper({ cwd: join(dir, "runner-state") });
    const sibling = sleeper({ cwd: join(root, "run_10") });
    await until(() => isLive(inside) && isLive(sibling), "the sleepers started");
    const found = liveRunProcesses({ dir, runnerPids: [], groups: [] });
    assert.deepEqual(found, [`${inside} sleep 60`]);
  });

  it("reports a member of a runner's or a reported group, and an orphan guard a runner of the run owns", async () => {
    const leader = sleeper({ detached: true });
    const owner = 999_999_999; // no such process: the guard's owner, as its $1 names it
    const guard = sleeper({ argv0: [ORPHAN_GUARD_NAME, String(owner)] });
    const strangersGuard = sleeper({ argv0: [ORPHAN_GUARD_NAME, "12345"] });
    await until(() => [leader, guard, strangersGuard].every(isLive), "the sleepers started");
    const scope = { dir, runnerPids: [owner], groups: [leader] };
    assert.deepEqual(
      liveRunProcesses(scope).sort(),
      [`${leader} sleep 60`, `${guard} /bin/sh -c sleep 60; exit 0 ${ORPHAN_GUARD_NAME} ${owner}`].sort(),
      `not another owner's guard (${strangersGuard})`,
    );
  });

  it("runSurvivors waits, bounded, for the run's processes to end, and reports none once they have", async () => {
    const late = sleeper({ cwd: dir });
    await until(() => isLive(late), "the sleeper started");
    setTimeout(() => process.kill(late, "SIGKILL"), 100);
    assert.deepEqual(await runSurvivors({ dir, runnerPids: [], groups: [] }, 5_000), []);
    const stays = sleeper({ cwd: dir });
    await until(() => isLive(stays), "the sleeper started");
    assert.deepEqual(
      await runSurvivors({ dir, runnerPids: [], groups: [] }, 100),
      [`${stays} sleep 60`],
      "past the wait, a survivor is reported",
    );
  });
});
