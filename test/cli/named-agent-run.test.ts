import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { installDir } from "../../src/agents/agents-dir.js";
import { isPackageLaunch } from "../../src/agents/catalog.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { installedProfile, TEST_AGENTS_DIR } from "../support/agents-cache.js";

/** Live processes whose command line names `path`: what an agent of that install left behind. */
function processesUnder(path: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
    } catch {
      continue; // gone while we looked
    }
    if (cmdline.includes(path)) found.push(`${pid}: ${cmdline}`);
  }
  return found;
}

/** The done-when: the real claude, logged out, through `prp run --agent claude`. */
describe("prp run --agent claude without credentials", () => {
  const home = mkdtempSync(join(tmpdir(), "prp-named-run-home-"));
  const work = mkdtempSync(join(tmpdir(), "prp-named-run-work-"));
  after(() => {
    rmSync(home, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });
  const profile = installedProfile("claude");
  const launch = profile.launch;
  assert.ok(isPackageLaunch(launch));
  const install = installDir(TEST_AGENTS_DIR, "claude", launch);

  const prp = (args: string[]) =>
    spawnSync(process.execPath, [join(packageRoot(), "bin/prp.js"), "run", "--agent", "claude", ...args], {
      cwd: work,
      env: { PATH: process.env.PATH, HOME: home, PRP_AGENTS_DIR: TEST_AGENTS_DIR },
      encoding: "utf8",
      timeout: 90_000,
    });

  it("ends at once with authentication_required and the fix in one line, the same in the terminal event", () => {
    const human = prp(["--prompt", "say hi"]);
    assert.equal(human.error, undefined, `prp run did not finish within 90 s: ${human.stderr}`);
    assert.equal(human.status, 1, human.stdout + human.stderr);
    const line = human.stdout.split("\n").find((l) => l.includes("cannot start the agent"));
    assert.equal(
      line?.trim(),
      "cannot start the agent: authentication_required — claude is not logged in: " + profile.auth.login,
      human.stdout,
    );

    const json = prp(["--json", "--prompt", "say hi"]);
    assert.equal(json.status, 1, json.stderr);
    const events = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { eventType: string; payload: Record<string, unknown> });
    const terminals = events.filter((e) => e.eventType === "run.terminal");
    assert.equal(terminals.length, 1, "one run.terminal");
    assert.equal(events.at(-1)?.eventType, "run.terminal", "and it is last");
    const stop = terminals[0]!.payload.stopReason as Record<string, unknown>;
    assert.deepEqual([stop.kind, stop.code], ["agent_start", "authentication_required"]);
    assert.equal(stop.message, `claude is not logged in: ${profile.auth.login}`);
    assert.equal(
      events.some((e) => e.eventType === "session.started"),
      false,
      "no session was opened: the run ended right after initialize",
    );
    assert.deepEqual(processesUnder(install), [], "no process of the agent is left");
  });
});
