import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:net";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import { agentCwdRefusal } from "../../src/harness/sandbox/sandbox-policy.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { runPrp, type CliRun } from "./run-cli.js";

/*
 * An agent's workspace is shown to it writable: inside the runner's state, a demo's folder or a
 * --sandbox-hide path it would show what must stay hidden. Every command that starts an agent
 * refuses such an --agent-cwd as a usage error (exit 2), naming the option and both paths, before
 * it starts anything: no agent, no runner, no connection, no run folder.
 */
describe("--agent-cwd inside a hidden path is refused before anything starts", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-agent-cwd-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  /** A fresh folder with a hidden folder `hidden` holding the agent's would-be workspace `inside`, and an agent that leaves `marker` if it is ever started. */
  const layout = () => {
    const root = join(dir, `case-${++n}`);
    const hidden = join(root, "hidden");
    const inside = join(hidden, "work");
    mkdirSync(inside, { recursive: true });
    const marker = join(root, "agent-started");
    return { root, hidden, inside, marker, agent: `touch ${marker}` };
  };
  /** The refusal: a usage error that names the option, the workspace and the hidden path, and no agent started. */
  const refused = (run: CliRun, cwd: string, hidden: string, marker: string) => {
    assert.equal(run.status, 2, `exit 2 (usage); stderr: ${run.stderr}`);
    assert.ok(
      run.stderr.includes(`--agent-cwd ${cwd} lies inside ${hidden}, which the agent must never see`),
      run.stderr,
    );
    assert.equal(existsSync(marker), false, "the agent was never started");
  };
  const runnerd = (args: string[], env: Record<string, string> = {}): CliRun => {
    const r = spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), ...args], {
      input: "",
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, ...env },
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const ids = ["--run-id", "run_cwd", "--session-id", "session_cwd", "--runner-id", "runner_cwd"];

  it("the rule: inside or at a hidden path is refused; beside it (even a name it prefixes) is not", () => {
    assert.match(
      agentCwdRefusal("/a/hidden/work", ["/a/hidden"]) ?? "",
      /--agent-cwd \/a\/hidden\/work lies inside \/a\/hidden/,
    );
    assert.notEqual(agentCwdRefusal("/a/hidden", ["/a/other", "/a/hidden/"]), null);
    assert.equal(agentCwdRefusal("/a/hidden-2", ["/a/hidden"]), null);
    assert.equal(
      agentCwdRefusal("/a", ["/a/hidden"]),
      null,
      "a workspace holding a hidden path is allowed: the path is hidden in it",
    );
    assert.notEqual(agentCwdRefusal("/a/..hidden", ["/a"]), null, "a name that starts with .. is still inside");
  });

  it("prp-runnerd --local: --agent-cwd inside a --sandbox-hide path → exit 2, no record written, no agent", () => {
    const { hidden, inside, marker, agent } = layout();
    const run = runnerd([
      "--local",
      ...ids,
      "--harness",
      "acp",
      "--agent-command",
      agent,
      "--agent-cwd",
      inside,
      "--sandbox-hide",
      hidden,
    ]);
    refused(run, inside, hidden, marker);
    assert.equal(run.stdout, "", "no stream record");
  });

  it("prp-runnerd durable: --agent-cwd inside --state-dir → exit 2, no connection to the authority, no state written, no agent", async () => {
    const { hidden: stateDir, inside, marker, agent } = layout();
    let connections = 0;
    const server: Server = createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as { port: number };
      const run = runnerd(
        [
          "--connect-url",
          `ws://127.0.0.1:${port}/runs/run_cwd`,
          ...ids,
          "--environment-lease-id",
          "lease_cwd",
          "--turn-id",
          "turn_cwd",
          "--item-id",
          "item_cwd",
          "--state-dir",
          stateDir,
          "--harness",
          "acp",
          "--agent-command",
          agent,
          "--agent-cwd",
          inside,
        ],
        { PAPERCLIP_RUNNER_BOOTSTRAP_TICKET: "ticket-never-spent" },
      );
      refused(run, inside, stateDir, marker);
      await new Promise((r) => setTimeout(r, 200)); // a connection the kernel accepted would be seen by now
      assert.equal(connections, 0, "the runner never dialled the authority");
      assert.deepEqual(readdirSync(stateDir), ["work"], "nothing written to the runner's state");
    } finally {
      server.close();
    }
  });

  it("prp run: --agent-cwd inside a --sandbox-hide path → exit 2, no run folder, no agent", () => {
    const { root, hidden, inside, marker, agent } = layout();
    const out = join(root, "out");
    const run = runPrp(
      [
        "run",
        "--json",
        "--agent-command",
        agent,
        "--prompt",
        "hi",
        "--agent-cwd",
        inside,
        "--sandbox-hide",
        hidden,
        "--out",
        out,
      ],
      { cwd: root },
    );
    refused(run, inside, hidden, marker);
    assert.equal(existsSync(out), false, "no run folder was made");
  });

  it("prp run: the must-fail twin — an --agent-cwd beside the hidden path (its name prefixed by it) runs", () => {
    const { root, hidden } = layout();
    const beside = `${hidden}-2`;
    mkdirSync(beside);
    const run = runPrp(
      [
        "run",
        "--json",
        "--agent-command",
        testAgentCommand("streamed-answer"),
        "--prompt",
        "Fix the failing test.",
        "--permission-policy",
        "deny",
        "--agent-cwd",
        beside,
        "--sandbox-hide",
        hidden,
        "--out",
        join(root, "out"),
      ],
      { cwd: root },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /"runTerminalState":"succeeded"/);
  });

  it("prp run: the default --agent-cwd (where prp run was started) inside a --sandbox-hide path is refused too", () => {
    const { root, hidden, inside, marker, agent } = layout();
    const run = runPrp(
      [
        "run",
        "--json",
        "--agent-command",
        agent,
        "--prompt",
        "hi",
        "--sandbox-hide",
        hidden,
        "--out",
        join(root, "out"),
      ],
      { cwd: inside },
    );
    refused(run, inside, hidden, marker);
  });

  it("prp demo: --agent-cwd inside the demo's --out folder → exit 2, no authority started, no run registered, no agent", () => {
    const { hidden: out, inside, marker, agent } = layout();
    const run = runPrp(
      [
        "demo",
        "--json",
        "--agent-command",
        agent,
        "--prompt",
        "hi",
        "--permission-policy",
        "deny",
        "--agent-cwd",
        inside,
        "--out",
        out,
      ],
      { cwd: dir },
    );
    refused(run, inside, out, marker);
    assert.deepEqual(readdirSync(out), ["work"], "no demo state: no authority store, key or run");
  });

  it("prp demo: --agent-cwd inside a --sandbox-hide path → exit 2, nothing started", () => {
    const { root, hidden, inside, marker, agent } = layout();
    const out = join(root, "out");
    const run = runPrp(
      [
        "demo",
        "--json",
        "--agent-command",
        agent,
        "--prompt",
        "hi",
        "--permission-policy",
        "deny",
        "--agent-cwd",
        inside,
        "--sandbox-hide",
        hidden,
        "--out",
        out,
      ],
      { cwd: dir },
    );
    refused(run, inside, hidden, marker);
    assert.equal(existsSync(out), false, "no demo state");
  });
});
