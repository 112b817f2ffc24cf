import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { INSTALLED_MARKER, installDir, isInstalled } from "../../src/agents/agents-dir.js";
import type { PackageLaunch } from "../../src/agents/catalog.js";
import { installAgent, type InstallOptions } from "../../src/agents/install.js";
import { startTestRegistry, type TestRegistry } from "../support/npm-registry.js";
import { TEST_PACKAGES, testProfile } from "./agent-fixtures.js";

describe("installAgent: the real npm against a registry on 127.0.0.1", () => {
  let registry: TestRegistry;
  let root: string;
  let cache: string;
  let marks: string;
  let n = 0;
  /** A fresh agents folder. */
  const freshDir = () => join(root, `agents-${++n}`);
  const withMarks = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ ...env, PRP_TEST_MARKS: marks });
  const options = (extra: Partial<InstallOptions> = {}): InstallOptions => ({
    env: withMarks(registry.env(cache)),
    ...extra,
  });
  /** What is left in an agents folder, beside the installs named. */
  const entries = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

  before(async () => {
    registry = await startTestRegistry(TEST_PACKAGES);
    root = mkdtempSync(join(tmpdir(), "prp-agents-install-"));
    cache = join(root, "npm-cache");
    marks = join(root, "marks");
    mkdirSync(marks);
  });
  after(async () => {
    await registry.close();
    rmSync(root, { recursive: true, force: true });
  });

  const profile = testProfile("t", {});
  const launch = profile.launch as PackageLaunch;
  let installedIn: string;

  it("installs: its own package.json and lockfile, the bin, the marker; only the allowed install script ran", async () => {
    installedIn = freshDir();
    const lines: string[] = [];
    const r = await installAgent(profile, installedIn, options({ progress: (l) => lines.push(l) }));
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.value.status, "installed");
    const home = installDir(installedIn, "t", launch);
    assert.equal(r.value.path, home);
    assert.deepEqual(JSON.parse(readFileSync(join(home, "package.json"), "utf8")), {
      private: true,
      name: "prp-agent-t",
      dependencies: { "prp-test-agent": "1.0.0" },
    });
    const lock = JSON.parse(readFileSync(join(home, "package-lock.json"), "utf8")) as {
      packages: Record<string, unknown>;
    };
    assert.ok(lock.packages["node_modules/prp-test-dep"], "the lockfile holds the dependency");
    const marker = JSON.parse(readFileSync(join(home, INSTALLED_MARKER), "utf8")) as Record<string, string>;
    assert.deepEqual(
      [marker.package, marker.version, marker.bin, marker.node],
      ["prp-test-agent", "1.0.0", "prp-test-agent", process.version],
    );
    assert.match(marker.npm!, /^\d+\.\d+\.\d+/);
    assert.ok(!Number.isNaN(Date.parse(marker.installedAt!)));
    assert.equal(
      execFileSync(join(home, "node_modules/.bin/prp-test-agent"), { encoding: "utf8" }),
      "prp test agent\n",
    );
    // The profile allows prp-test-agent's script; the dependency's (which writes outside the
    // install, as a hostile one would) never runs.
    assert.ok(existsSync(join(marks, "agent-script-ran")), "the allowed install script ran");
    assert.ok(!existsSync(join(marks, "dep-script-ran")), "a dependency's install script ran");
    assert.deepEqual(entries(installedIn), ["t@1.0.0"], "no staging folder is left");
    assert.deepEqual(lines.slice(0, 1), ["installing t (prp-test-agent@1.0.0)…"]);
    assert.ok(
      lines.some((l) => l.includes("npm rebuild prp-test-agent")),
      lines.join("\n"),
    );
  });

  it("a second install is a no-op: npm is not even run (no registry, no npm on PATH)", async () => {
    const r = await installAgent(profile, installedIn, { env: { PATH: join(root, "no-bin") } });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.value.status, "already_installed");
  });

  it("once in npm's cache, --offline installs with the registry gone", async () => {
    const own = await startTestRegistry(TEST_PACKAGES.slice(0, 2));
    try {
      const ownCache = join(root, "own-cache");
      const online = await installAgent(profile, freshDir(), { env: withMarks(own.env(ownCache)) });
      assert.ok(online.ok, JSON.stringify(online));
      await own.stop();
      const dir = freshDir();
      const r = await installAgent(profile, dir, { offline: true, env: withMarks(own.env(ownCache)) });
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.value.status, "installed");
      assert.ok(isInstalled(dir, "t", launch));
    } finally {
      await own.close();
    }
  });

  it("a version the registry does not have: agent_install_failed, saying so, and nothing left behind", async () => {
    const dir = freshDir();
    const r = await installAgent(testProfile("t", { version: "9.9.9" }), dir, options());
    assert.ok(!r.ok);
    assert.equal(r.error.code, "agent_install_failed");
    assert.equal(r.error.path, "t");
    assert.match(r.error.message, /prp-test-agent@9\.9\.9 does not exist in the registry \(npm: ETARGET\)/);
    assert.deepEqual(entries(dir), []);
  });

  it("a package the registry does not have: the same, from npm's E404", async () => {
    const dir = freshDir();
    const r = await installAgent(testProfile("t", { package: "@prp-test/nope", version: "1.0.0" }), dir, options());
    assert.ok(!r.ok);
    assert.match(r.error.message, /@prp-test\/nope@1\.0\.0 does not exist in the registry \(npm: E404\)/);
    assert.deepEqual(entries(dir), []);
  });

  it("--offline with an empty cache: not in npm's cache, and --offline was given", async () => {
    const dir = freshDir();
    const r = await installAgent(profile, dir, {
      offline: true,
      env: withMarks(registry.env(join(root, "empty-cache"))),
    });
    assert.ok(!r.ok);
    assert.equal(r.error.code, "agent_install_failed");
    assert.match(r.error.message, /prp-test-agent@1\.0\.0 is not in npm's cache and --offline was given/);
    assert.deepEqual(entries(dir), []);
  });

  it("an allowed install script that fails: npm's own words, and no folder that looks installed", async () => {
    const dir = freshDir();
    const failing = testProfile("f", {
      package: "prp-failing-agent",
      bin: "prp-failing-agent",
      installScripts: ["prp-failing-agent"],
    });
    const r = await installAgent(failing, dir, options());
    assert.ok(!r.ok);
    assert.equal(r.error.code, "agent_install_failed");
    assert.match(r.error.message, /failed at `npm rebuild`: npm said:/);
    assert.match(r.error.message, /cannot build/);
    assert.deepEqual(entries(dir), []);
    assert.ok(!isInstalled(dir, "f", failing.launch as PackageLaunch));
  });

  it("a bin the package does not have: refused, naming the profile's launch.bin", async () => {
    const dir = freshDir();
    const r = await installAgent(testProfile("t", { bin: "nosuch" }), dir, options());
    assert.ok(!r.ok);
    assert.match(r.error.message, /gave no node_modules\/\.bin\/nosuch/);
    assert.deepEqual(entries(dir), []);
  });

  it("a staging folder left by a dead install is removed; one of a running install is not", async () => {
    const dir = freshDir();
    const dead = join(dir, ".staging-t@1.0.0-999999999-0dead");
    const running = join(dir, `.staging-t@1.0.0-${process.ppid}-live`);
    mkdirSync(dead, { recursive: true });
    mkdirSync(running);
    const r = await installAgent(profile, dir, options());
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual(entries(dir).sort(), [".staging-t@1.0.0-" + process.ppid + "-live", "t@1.0.0"].sort());
  });

  it("two installs at once: both succeed, one folder, complete, no staging left", async () => {
    const dir = freshDir();
    const [a, b] = await Promise.all([installAgent(profile, dir, options()), installAgent(profile, dir, options())]);
    assert.ok(a.ok && b.ok, JSON.stringify([a, b]));
    assert.ok([a.value.status, b.value.status].includes("installed"), JSON.stringify([a, b]));
    assert.ok(isInstalled(dir, "t", launch));
    assert.deepEqual(entries(dir), ["t@1.0.0"]);
  });

  it("no npm on PATH: npm_not_found, and nothing left behind", async () => {
    const dir = freshDir();
    const r = await installAgent(profile, dir, { env: { PATH: join(root, "no-bin") } });
    assert.ok(!r.ok);
    assert.equal(r.error.code, "npm_not_found");
    assert.match(r.error.message, /npm is not on PATH/);
    assert.deepEqual(entries(dir), []);
  });

  it("a command profile has nothing to install", async () => {
    const r = await installAgent(testProfile("c", { command: "my-agent", args: ["--acp"] }), freshDir(), options());
    assert.ok(r.ok);
    assert.equal(r.value.status, "nothing_to_install");
    assert.match(r.value.message, /nothing to install: c runs the command `my-agent`/);
  });
});
