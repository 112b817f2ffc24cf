import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { packageRoot } from "../../../src/contract/package-root.js";
import { durableAgentRun } from "../../cli/acp-durable-support.js";
import { describeProcesses, liveGroupMembers } from "../../support/processes.js";
import { until } from "../../support/until.js";
import { installedProfile, TEST_AGENTS_DIR } from "../../support/agents-cache.js";
import {
  assertStartCause,
  commandProfile,
  noneLeft,
  runnerdRun,
  scenarioFile,
  shellAgent,
  testAgentOn,
  writeCatalog,
} from "./start-causes-support.js";

/** Far below the 60 s an ACP agent has to answer: a start failure is never a timeout. */
const AT_ONCE_MS = 20_000;

describe("an agent that cannot start the run ends it at once, with a typed cause (local prp-runnerd)", () => {
  let dir: string;
  let home: string;
  let n = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-start-causes-"));
    home = join(dir, "home");
    mkdirSync(home);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A fresh workspace, and a catalog of its profiles in it. */
  const workspace = () => {
    const ws = join(dir, `ws${++n}`);
    mkdirSync(ws);
    return ws;
  };
  const named = (ws: string, profile: Record<string, unknown>, extra: string[] = []) => [
    "--agent",
    String(profile.name),
    "--agent-catalog",
    writeCatalog(join(ws, "catalog.json"), [profile]),
    "--agent-cwd",
    ws,
    ...extra,
  ];

  it("agent_not_installed: no process is started, the message says how to install it", async () => {
    const empty = join(dir, "no-agents");
    mkdirSync(empty);
    const r = await runnerdRun(["--agent", "claude", "--agents-dir", empty, "--agent-cwd", workspace()], {
      HOME: home,
    });
    const message = assertStartCause(r, "agent_not_installed");
    const launch = installedProfile("claude").launch as { package: string; version: string };
    assert.equal(
      message,
      `claude (${launch.package}@${launch.version}) is not installed in ${empty}: run \`prp agents install claude\``,
    );
    assert.ok(!r.types.includes("harness.ready") && !r.types.includes("harness.exited"), r.types.join(", "));
    assert.equal(r.terminal.reconciliation.processExit, null, "no process, no exit");
    assert.ok(r.ms < AT_ONCE_MS, `ended at once: ${r.ms} ms`);
    assert.equal(r.status, 0);
  });

  it("an unknown name is a usage error (exit 2) that lists the agents; --agent and --agent-command exclude each other", () => {
    const runnerd = (args: string[]) =>
      spawnSync(
        process.execPath,
        [
          join(packageRoot(), "bin/prp-runnerd.js"),
          "--local",
          "--run-id",
          "r",
          "--session-id",
          "s",
          "--runner-id",
          "w",
          ...args,
        ],
        { input: "", encoding: "utf8", timeout: 30_000 },
      );
    const unknown = runnerd(["--agent", "nobody"]);
    assert.equal(unknown.status, 2, unknown.stderr);
    assert.match(unknown.stderr, /no agent named "nobody": the catalog has claude, codex, gemini, opencode/);
    const both = runnerd(["--agent", "claude", "--agent-command", "true"]);
    assert.equal(both.status, 2, both.stderr);
    assert.match(both.stderr, /choose --agent NAME or --agent-command CMD, not both/);
  });

  it("agent_exited_before_initialize: its exit and stderr tail, credentials and escapes never raw", async () => {
    const ws = workspace();
    const script = shellAgent(
      ws,
      "crashes.sh",
      [
        "printf 'loading config\\n' >&2",
        "printf 'ANTHROPIC_API_KEY=sk-ant-api03-AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH\\n' >&2",
        "printf '\\033]0;owned\\007\\033[2Jfatal: cannot start\\n' >&2",
        "exit 7",
      ].join("\n"),
    );
    const r = await runnerdRun(named(ws, commandProfile("crasher", script)), { HOME: home });
    const message = assertStartCause(r, "agent_exited_before_initialize");
    assert.match(
      message,
      /^the agent exited \(exit code 7\) before it answered initialize: the last lines of its stderr: /,
    );
    assert.match(message, /loading config/);
    assert.match(message, /fatal: cannot start/);
    assert.ok(!message.includes("sk-ant-api03"), `no credential: ${message}`);
    assert.ok(!/[\u0000-\u001f\u007f-\u009f]/.test(message), `no control character: ${JSON.stringify(message)}`);
    assert.ok(!r.types.includes("harness.ready"));
    assert.equal(r.payload("harness.exited")?.exitCode, 7, "harness.exited still carries the exit and the tail");
    assert.ok(r.ms < AT_ONCE_MS, `ended at once: ${r.ms} ms`);
    await noneLeft(script);
  });

  it("agent_exited_before_initialize: a signal is named (and the agent is not restarted)", async () => {
    const ws = workspace();
    const script = shellAgent(ws, "killed.sh", "kill -KILL $$");
    const r = await runnerdRun(named(ws, commandProfile("killed", script)), { HOME: home });
    const message = assertStartCause(r, "agent_exited_before_initialize");
    assert.match(message, /\(signal SIGKILL\).*it wrote nothing to stderr$/);
    assert.equal(r.types.filter((t) => t === "harness.starting").length, 1);
    await noneLeft(script);
  });

  it("authentication_required: auth methods and none of the profile's credentials: no session/new", async () => {
    const ws = workspace();
    const scenario = scenarioFile(ws, "needs-login", {
      initializeExtras: { authMethods: [{ id: "test-login", name: "Log in" }] },
    });
    const profile = commandProfile("locked", testAgentOn(scenario), {
      env: ["PRP_TEST_AGENT_KEY"],
      files: [".locked/credentials.json"],
    });
    const r = await runnerdRun(named(ws, profile), { HOME: home });
    const message = assertStartCause(r, "authentication_required");
    assert.equal(message, "locked is not logged in: log locked in with `locked login`");
    assert.ok(r.types.includes("harness.ready") && !r.types.includes("session.started"), r.types.join(", "));
    assert.ok(r.ms < AT_ONCE_MS, `ended at once: ${r.ms} ms`);
    await noneLeft(scenario);

    // The same agent given its key starts, and the run goes on to its end.
    const keyed = await runnerdRun(named(ws, profile, ["--agent-env", "PRP_TEST_AGENT_KEY=k"]), { HOME: home });
    assert.equal(keyed.terminal.runTerminalState, "succeeded", JSON.stringify(keyed.terminal));
    await noneLeft(scenario);
  });

  it("authentication_required: -32000 at the prompt, with a profile's login line or without a profile", async () => {
    const ws = workspace();
    const withProfile = await runnerdRun(named(ws, commandProfile("keyless", testAgentOn("auth-required"))), {
      HOME: home,
    });
    assert.equal(
      assertStartCause(withProfile, "authentication_required"),
      "keyless is not logged in: log keyless in with `keyless login`",
    );
    assert.equal(withProfile.payload("turn.failed")?.code, "authentication_required");
    const bare = await runnerdRun(
      ["--harness", "acp", "--agent-command", testAgentOn("auth-required"), "--agent-cwd", ws],
      { HOME: home },
    );
    assert.equal(assertStartCause(bare, "authentication_required"), "the agent needs a login or key: log it in");
    assert.ok(bare.ms < AT_ONCE_MS, `ended at once: ${bare.ms} ms`);
  });

  it("unsupported_protocol_version: names the version answered and the one spoken", async () => {
    const ws = workspace();
    const scenario = scenarioFile(ws, "version-99", { initializeExtras: { protocolVersion: 99 } });
    const r = await runnerdRun(named(ws, commandProfile("future", testAgentOn(scenario))), { HOME: home });
    const message = assertStartCause(r, "unsupported_protocol_version");
    assert.match(message, /protocol version 99; this client speaks only version 1/);
    assert.ok(!r.types.includes("session.started"));
    await noneLeft(scenario);
  });

  it("model_unavailable: a model the session does not offer; an offered one is selected before the prompt", async () => {
    const ws = workspace();
    const models = Array.from({ length: 12 }, (_, i) => ({ modelId: `m${i + 1}`, name: `Model ${i + 1}` }));
    const scenario = scenarioFile(ws, "models", {
      sessionExtras: { models: { availableModels: models, currentModelId: "m1" } },
    });
    const profile = commandProfile("modelled", testAgentOn(scenario));
    const r = await runnerdRun(named(ws, profile, ["--agent-model", "gpt-nine"]), { HOME: home });
    const message = assertStartCause(r, "model_unavailable");
    assert.equal(
      message,
      'the agent does not offer the model "gpt-nine": it offers m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, and 2 more',
    );
    assert.ok(r.ms < AT_ONCE_MS, `ended at once: ${r.ms} ms`);
    await noneLeft(scenario);

    const chosen = await runnerdRun(named(ws, profile, ["--agent-model", "m2"]), { HOME: home });
    assert.equal(chosen.terminal.runTerminalState, "succeeded", JSON.stringify(chosen.terminal));
    assert.match(String(chosen.payload("run.result.proposed")?.summary), /model m2/);
    assert.ok(
      chosen.events.some((e) => (e.payload as Record<string, unknown>).currentModelId === "m2"),
      "the selection is recorded (session.updated)",
    );
  });

  it("a model config option is selected with session/set_config_option", async () => {
    const ws = workspace();
    const configOptions = [
      {
        id: "model",
        name: "Model",
        category: "model",
        type: "select",
        currentValue: "small",
        options: [
          {
            group: "all",
            name: "All",
            options: [
              { value: "small", name: "S" },
              { value: "large", name: "L" },
            ],
          },
        ],
      },
    ];
    const scenario = scenarioFile(ws, "config-model", { sessionExtras: { configOptions } });
    const r = await runnerdRun(
      named(ws, commandProfile("configured", testAgentOn(scenario)), ["--agent-model", "large"]),
      {
        HOME: home,
      },
    );
    assert.equal(r.terminal.runTerminalState, "succeeded", JSON.stringify(r.terminal));
    assert.match(String(r.payload("run.result.proposed")?.summary), /model large/);
  });

  it("an agent that lists no models: the run goes on, and a diagnostic says the model could not be checked", async () => {
    const ws = workspace();
    const r = await runnerdRun(
      ["--harness", "acp", "--agent-command", testAgentOn("streamed-answer"), "--agent-cwd", ws, "--agent-model", "m1"],
      { HOME: home },
    );
    assert.equal(r.terminal.runTerminalState, "succeeded", JSON.stringify(r.terminal));
    assert.ok(
      r.events.some(
        (e) =>
          e.eventType === "harness.diagnostic" && (e.payload as Record<string, unknown>).code === "acp_model_unchecked",
      ),
      r.types.join(", "),
    );
  });

  it("permission modes: the profile's mode for the policy is set with session/set_mode and recorded", async () => {
    const ws = workspace();
    const modes = {
      availableModes: [
        { id: "default", name: "Default" },
        { id: "plan", name: "Plan" },
      ],
      currentModeId: "default",
    };
    const scenario = scenarioFile(ws, "modes", { sessionExtras: { modes } });
    const profile = commandProfile("moded", testAgentOn(scenario), {}, { deny: "plan" });
    const r = await runnerdRun(named(ws, profile, ["--permission-policy", "deny"]), { HOME: home });
    assert.equal(r.terminal.runTerminalState, "succeeded", JSON.stringify(r.terminal));
    assert.match(String(r.payload("run.result.proposed")?.summary), /mode plan/);
    const updated = r.events.find(
      (e) =>
        e.eventType === "session.updated" && (e.payload as Record<string, unknown>).update === "current_mode_update",
    );
    assert.equal((updated?.payload as Record<string, unknown> | undefined)?.currentModeId, "plan");
  });

  it("the real claude-code-acp, logged out: authentication_required at once, and the fix in one line", async () => {
    installedProfile("claude");
    const r = await runnerdRun(["--agent", "claude", "--agents-dir", TEST_AGENTS_DIR, "--agent-cwd", workspace()], {
      HOME: home,
    });
    const message = assertStartCause(r, "authentication_required");
    assert.equal(message, `claude is not logged in: ${installedProfile("claude").auth.login}`);
    assert.ok(!r.types.includes("session.started"), "no session/new");
    assert.ok(r.ms < AT_ONCE_MS, `ended at once: ${r.ms} ms`);
    const pid = r.payload("harness.ready")!.pid as number;
    await noneLeft(join(TEST_AGENTS_DIR, "claude@"));
    await until(
      () => liveGroupMembers(pid).length === 0,
      () => `no live process in claude-code-acp's group ${pid}: ${describeProcesses(liveGroupMembers(pid))}`,
    );
  });
});

describe("a start cause in durable mode", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-start-causes-durable-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("authentication_required: the authority's record ends with the typed cause, at once, once", async () => {
    const cwd = mkdtempSync(join(dir, "ws-"));
    const scenario = scenarioFile(cwd, "needs-login", {
      initializeExtras: { authMethods: [{ id: "test-login", name: "Log in" }] },
    });
    const profile = commandProfile("locked", testAgentOn(scenario), { env: ["PRP_TEST_AGENT_KEY"] });
    const catalog = writeCatalog(join(cwd, "catalog.json"), [profile]);
    const started = Date.now();
    const r = await durableAgentRun(dir, {
      command: "unused",
      named: ["--agent", "locked", "--agent-catalog", catalog],
      cwd,
    });
    const message = assertStartCause(r, "authentication_required");
    assert.equal(message, "locked is not logged in: log locked in with `locked login`");
    assert.ok(!r.types.includes("session.started"), r.types.join(", "));
    assert.ok(Date.now() - started < 45_000, "no agent deadline was waited for");
    await noneLeft(scenario);
  });
});
