import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import { TEST_AGENTS_DIR } from "../support/agents-cache.js";
import { startTestRegistry, type TestRegistry } from "../support/npm-registry.js";
import { TEST_PACKAGES, testProfile, writeCatalog } from "../agents/agent-fixtures.js";
import { runPrp } from "./run-cli.js";

/** `prp ARGS` with `env`, not blocking this process (the test registry answers from it). */
function prp(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(packageRoot(), "bin/prp.js"), ...args],
      { env, encoding: "utf8", timeout: 120_000 },
      (error, stdout, stderr) => resolve({ status: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("prp agents list", () => {
  it("--json: the four real agents, installed in the tests' folder, and this Node runs them", () => {
    const run = runPrp(["agents", "list", "--json", "--agents-dir", TEST_AGENTS_DIR]);
    assert.equal(run.status, 0, run.stderr);
    const doc = JSON.parse(run.stdout) as { agentsDir: string; node: string; agents: Array<Record<string, any>> };
    assert.equal(doc.agentsDir, TEST_AGENTS_DIR);
    assert.equal(doc.node, process.version);
    assert.deepEqual(
      doc.agents.map((a) => [a.name, a.installed, a.node.ok]),
      [
        ["claude", true, true],
        ["codex", true, true],
        ["gemini", true, true],
        ["opencode", true, true],
      ],
      "run `npm run agents:install` if one is not installed",
    );
    assert.equal(doc.agents[0]!.package, "@zed-industries/claude-code-acp@0.16.2");
    assert.match(doc.agents[0]!.login, /claude \/login/);
  });

  it("a user catalog: a command profile, a range it cannot read, and a hostile title shown, not obeyed", () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-agents-list-"));
    try {
      const hostile = testProfile("odd", { node: "^18 || ^20" });
      hostile.title = "\u001b]0;pwned\u0007\u001b[2Jtitle";
      const catalog = writeCatalog(dir, [hostile, testProfile("mine", { command: "my-agent", args: ["--acp"] })]);
      const run = runPrp(["agents", "list", "--catalog", catalog, "--agents-dir", dir]);
      assert.equal(run.status, 0, run.stderr);
      assert.doesNotMatch(run.stdout, /\u001b/, "no escape sequence reaches the terminal");
      assert.match(run.stdout, /\\x1b\]0;pwned\\x07\\x1b\[2Jtitle/);
      assert.match(run.stdout, /^odd\s+prp-test-agent@1\.0\.0\s+no\s+\? \^18 \|\| \^20/m);
      assert.match(run.stdout, /^mine\s+command: my-agent --acp\s+-\s+-/m);
      assert.match(run.stdout, /odd: cannot check Node: the range "\^18 \|\| \^20" is not one this check reads/);
      assert.match(
        run.stdout,
        /^claude\s+@zed-industries\/claude-code-acp@0\.16\.2/m,
        "the built-in ones are listed too",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("prp agents install", () => {
  let registry: TestRegistry;
  let root: string;
  let catalog: string;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    registry = await startTestRegistry(TEST_PACKAGES);
    root = mkdtempSync(join(tmpdir(), "prp-agents-cli-"));
    mkdirSync(join(root, "marks"));
    catalog = writeCatalog(root, [
      testProfile("t", {}),
      testProfile("gone", { version: "9.9.9" }),
      testProfile("mine", { command: "my-agent", args: [] }),
    ]);
    env = { ...registry.env(join(root, "cache")), PRP_TEST_MARKS: join(root, "marks") };
  });
  after(async () => {
    await registry.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("an unknown name exits 2 with the names there are, and installs nothing", () => {
    const run = runPrp(["agents", "install", "claude", "nosuch", "--agents-dir", join(root, "unused")]);
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /no agent named "nosuch": the catalog has claude, codex, gemini, opencode/);
  });

  it("installs, streams its steps to stderr, prints one line per agent; a failed one exits 1", async () => {
    const dir = join(root, "agents");
    const ok = await prp(["agents", "install", "t", "mine", "--catalog", catalog, "--agents-dir", dir], env);
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stderr, /^installing t \(prp-test-agent@1\.0\.0\)…$/m);
    assert.doesNotMatch(ok.stderr, /added \d+ packages/, "npm's own output is not shown");
    assert.match(ok.stdout, /^t: installed in .*\/agents\/t@1\.0\.0$/m);
    assert.match(ok.stdout, /^mine: nothing to install: mine runs the command `my-agent`/m);

    const again = await prp(["agents", "install", "t", "--json", "--catalog", catalog, "--agents-dir", dir], env);
    assert.equal(again.status, 0, again.stderr);
    const doc = JSON.parse(again.stdout) as { ok: boolean; agents: Array<Record<string, any>> };
    assert.equal(doc.ok, true);
    assert.equal(doc.agents[0]!.result.status, "already_installed");

    const bad = await prp(["agents", "install", "gone", "--catalog", catalog, "--agents-dir", dir], env);
    assert.equal(bad.status, 1, bad.stderr);
    assert.match(
      bad.stdout,
      /^gone: FAILED \(agent_install_failed\) .*prp-test-agent@9\.9\.9 does not exist in the registry/m,
    );

    const warned = await prp(
      ["agents", "install", "gone", "--warn-only", "--catalog", catalog, "--agents-dir", dir],
      env,
    );
    assert.equal(warned.status, 0, warned.stderr);
    assert.match(warned.stderr, /WARNING: gone could not be installed.*\n.*`npm run agents:install`/);
  });

  it("--all with names, or neither, is a usage error", () => {
    assert.equal(runPrp(["agents", "install", "--all", "t"]).status, 2);
    assert.equal(runPrp(["agents", "install"]).status, 2);
  });
});
