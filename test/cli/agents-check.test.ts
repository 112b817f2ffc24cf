import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { AgentProfile } from "../../src/agents/catalog.js";
import type { ProbeReport } from "../../src/agents/probe.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { probeAgentProfile, TOKEN_ENV, writeCatalog } from "../agents/probe-catalog.js";
import { installedProfile, TEST_AGENTS_DIR } from "../support/agents-cache.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { within } from "../support/within.js";

const TOKEN = "prp-check-token-51c0de";
/** The sleep a hostile agent leaves behind, told apart by its duration. */
const ESCAPEE = "3000.5150";

/** Processes whose command line is the escapee's sleep. */
function escapees(): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8") === `sleep\0${ESCAPEE}\0`;
      } catch {
        return false; // gone while we looked
      }
    })
    .map(Number);
}
const REAL_AGENTS = ["claude", "codex", "gemini", "opencode"];

interface Checked {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `prp agents check …` with only PATH and an empty HOME of its own; killed if it outlives the wait. */
async function check(home: string, args: string[]): Promise<Checked> {
  const child = spawn(process.execPath, [join(packageRoot(), "bin/prp.js"), "agents", "check", ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const status = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  try {
    return { status: await within(status, 90_000, `prp agents check ${args.join(" ")}`), stdout, stderr };
  } finally {
    child.kill("SIGKILL");
  }
}

/** The JSON report of a finished check, after asserting that nothing of its agent's group is left. */
function reportOf(run: Checked): ProbeReport {
  const report = JSON.parse(run.stdout) as ProbeReport;
  if (report.pid !== null)
    assert.deepEqual(
      liveGroupMembers(report.pid),
      [],
      `nothing of ${report.agent}'s group outlives the check: ${describeProcesses(liveGroupMembers(report.pid))}`,
    );
  return report;
}

describe("prp agents check", () => {
  let home: string;
  let catalog: string;
  before(() => {
    home = mkdtempSync(join(tmpdir(), "prp-check-home-"));
    const claude = installedProfile("claude");
    const missing = { ...claude, launch: { ...claude.launch, version: "9.9.9" } } as AgentProfile;
    const escapee: AgentProfile = {
      ...probeAgentProfile("exit"),
      name: "probe-escapee",
      // A hostile agent leaves a child in a session of its own, then exits before initialize.
      launch: { command: "/bin/sh", args: ["-c", `setsid sleep ${ESCAPEE} </dev/null >/dev/null 2>&1 & exit 5`] },
    };
    catalog = writeCatalog(home, [
      missing,
      escapee,
      ...["answer", "exit", "garbage"].map((mode) => probeAgentProfile(mode)),
    ]);
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  it("each real agent, offline and logged out: initialize completes, needs_auth, exit 3, nothing left", async () => {
    const runs = await Promise.all(
      REAL_AGENTS.map((name) => check(home, [name, "--json", "--agents-dir", TEST_AGENTS_DIR])),
    );
    for (const [i, run] of runs.entries()) {
      const name = REAL_AGENTS[i]!;
      assert.equal(run.status, 3, `${name}: ${run.stdout}${run.stderr}`);
      const report = reportOf(run);
      assert.equal(report.verdict, "needs_auth", `${name}: ${report.message}`);
      assert.equal(report.protocolVersion, 1, name);
      assert.ok(report.agentInfo?.name, `${name} names itself`);
      assert.ok((report.authMethods ?? []).length > 0, `${name} advertises auth methods`);
      assert.equal(report.credentials.present, false, name);
      assert.equal(report.fix, installedProfile(name).auth.login);
      assert.ok(report.initializeMs !== null && report.initializeMs > 0, name);
    }
  });

  it("the human form: aligned lines ending with the verdict and the fix", async () => {
    const run = await check(home, ["claude", "--agents-dir", TEST_AGENTS_DIR]);
    assert.equal(run.status, 3, run.stderr);
    const lines = run.stdout.trimEnd().split("\n");
    assert.match(lines.at(-2)!, /^verdict {7}needs_auth: /);
    assert.match(lines.at(-1)!, /^fix {11}log in once with `claude \/login`/);
    assert.ok(lines.some((l) => /^credentials {3}ANTHROPIC_API_KEY absent, /.test(l)));
  });

  it("a package version that is not installed: broken, agent_not_installed, exit 4, the install command", async () => {
    const run = await check(home, ["claude", "--json", "--catalog", catalog, "--agents-dir", TEST_AGENTS_DIR]);
    assert.equal(run.status, 4, run.stderr);
    const report = reportOf(run);
    assert.equal(report.cause, "agent_not_installed");
    assert.match(report.message, /@zed-industries\/claude-code-acp@9\.9\.9\) is not installed/);
    assert.match(report.fix!, /^run `prp agents install claude --catalog '.*' --agents-dir '.*'`$/);
  });

  it("an agent that exits at once: broken, agent_exited_before_initialize, exit 4, its stderr tail redacted", async () => {
    const run = await check(home, ["probe-exit", "--catalog", catalog, "--agent-env", `${TOKEN_ENV}=${TOKEN}`]);
    assert.equal(run.status, 4, run.stderr);
    assert.match(run.stdout, /^exit {10}code 7$/m);
    assert.match(run.stdout, /^stderr {8}ANTHROPIC_API_KEY=\[redacted\]$/m);
    assert.match(run.stdout, /^stderr {8}fatal: cannot start$/m);
    assert.match(run.stdout, /^verdict {7}broken \(agent_exited_before_initialize\): /m);
    for (const secret of [TOKEN, "sk-ant-api03"]) assert.equal(`${run.stdout}${run.stderr}`.includes(secret), false);
  });

  it("a credential given with --agent-env: ready, exit 0, and its value appears nowhere", async () => {
    const run = await check(home, [
      "probe-answer",
      "--json",
      "--catalog",
      catalog,
      "--agent-env",
      `${TOKEN_ENV}=${TOKEN}`,
    ]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    const report = reportOf(run);
    assert.equal(report.verdict, "ready");
    assert.deepEqual(report.credentials.sources[0], { kind: "env", name: TOKEN_ENV, present: true });
    const human = await check(home, ["probe-answer", "--catalog", catalog, "--agent-env", `${TOKEN_ENV}=${TOKEN}`]);
    assert.equal(human.status, 0);
    for (const out of [run, human]) assert.equal(`${out.stdout}${out.stderr}`.includes(TOKEN), false);
  });

  it("escape sequences the agent writes are shown, not played", async () => {
    const run = await check(home, ["probe-garbage", "--catalog", catalog]);
    assert.equal(run.status, 3, run.stderr);
    assert.equal(/[\u001b\u0007]/.test(run.stdout), false, "no raw control character reaches the terminal");
    assert.match(run.stdout, /^agent info {4}probe-agent \(\\x1b\[2J\\x1b\]0;pwned\\x07Probe\) 1\.0\.0$/m);
  });

  it("the agent runs in the harness sandbox: a setsid child it leaves dies with it; under --sandbox none it survives", async () => {
    const sandboxed = await check(home, ["probe-escapee", "--json", "--catalog", catalog]);
    assert.equal(sandboxed.status, 4, sandboxed.stderr);
    assert.equal(reportOf(sandboxed).cause, "agent_exited_before_initialize");
    assert.deepEqual(escapees(), [], "the escapee did not outlive the sandbox's PID namespace");
    const bare = await check(home, ["probe-escapee", "--json", "--catalog", catalog, "--sandbox", "none"]);
    const left = escapees();
    for (const pid of left) process.kill(pid, "SIGKILL");
    assert.equal(bare.status, 4, bare.stderr);
    assert.match(bare.stderr, /--sandbox none: the harness runs as this user/);
    assert.equal(left.length, 1, "without the sandbox the setsid child escapes: the twin that shows the test can fail");
  });

  it("an unknown agent is a usage error: exit 2, naming the agents there are", async () => {
    const run = await check(home, ["nobody"]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /no agent named "nobody": the catalog has claude, codex, gemini, opencode/);
    assert.equal(run.stdout, "");
  });
});
