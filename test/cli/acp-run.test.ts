import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { decode } from "../../src/contract/index.js";
import { semanticToolBindingError } from "../../src/contract/fixture-bindings.js";
import { questionId } from "../../src/harness/acp/questions.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { acpScenariosDir } from "../../src/harness/acp/test-agent-scenario.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { agentPids, hostileAgent, noAgentLeft } from "../harness/acp/hostile-agent-support.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";
import { runPrp } from "./run-cli.js";

interface Ran {
  status: number | null;
  events: PrpEvent[];
  types: string[];
  stderr: string;
  terminal: Record<string, any>;
  payload(type: string, i?: number): Record<string, any>;
}

function parse(status: number | null, stdout: string, stderr: string): Ran {
  const events = stdout
    .trimEnd()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as PrpEvent);
  assert.equal(events.filter((e) => e.eventType === "run.terminal").length, 1, `exactly one run.terminal\n${stderr}`);
  events.forEach((e, i) => assert.equal(e.sourceSeq, i + 1, "contiguous sequence"));
  for (const e of events) assert.ok(decode(JSON.stringify(e)).ok, `every event passes the codec: ${e.eventType}`);
  const first = events[0]!;
  assert.equal(
    semanticToolBindingError(events, { runId: first.runId, normalizedSessionId: first.normalizedSessionId ?? "" }),
    null,
    "every authorised call has one input and one result receipt (wire.md §7.4)",
  );
  return {
    status,
    events,
    stderr,
    types: events.map((e) => e.eventType),
    terminal: events.at(-1)!.payload as Record<string, any>,
    payload: (type, i = 0) => events.filter((e) => e.eventType === type)[i]!.payload as Record<string, any>,
  };
}

/** No process of the agent's group is alive once `prp run` has exited (read from /proc). */
async function noOrphans(r: Ran): Promise<void> {
  const pid = r.payload("harness.ready").pid as number;
  await until(
    () => liveGroupMembers(pid).length === 0,
    () => `no live process in the agent's group ${pid}: ${describeProcesses(liveGroupMembers(pid))}`,
  );
}

const states = (r: Ran) => [
  r.terminal.turnTerminalState,
  r.terminal.runTerminalState,
  r.terminal.reconciliation.reason,
];

describe("prp run --agent: every test-agent scenario end to end in local mode", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-acp-run-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Every scenario that ran here: the last test checks that none was left out. */
  const ran = new Set<string>();
  const run = (scenario: string, extra: string[] = [], agent = testAgentCommand(scenario), cwd = dir) => {
    ran.add(scenario);
    const res = runPrp([
      "run",
      "--json",
      "--agent-command",
      agent,
      "--prompt",
      "Fix the failing test.",
      "--agent-cwd",
      cwd,
      "--out",
      dir,
      ...extra,
    ]);
    return parse(res.status, res.stdout, res.stderr);
  };

  it("streamed-answer: succeeded, exit status 0, the answer proposed as the result", async () => {
    const r = run("streamed-answer");
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
    assert.equal(r.payload("run.result.proposed").summary, "I fixed the greeting: the test passes now.");
    assert.equal(r.payload("session.closed").reason, "turn_ended");
    const tools = r.events.filter(
      (e) => e.eventType.startsWith("tool.execution.") || e.eventType === "workspace.change.updated",
    );
    assert.deepEqual(
      [...new Set(tools.map((e) => e.itemId))],
      ["tool_call_edit_1"],
      "the tool call's events carry its item id, as in durable mode",
    );
    await noOrphans(r);
  });

  it("permission, answered from --answer: accept → allow_once", async () => {
    const answers = join(dir, "answers.json");
    writeFileSync(answers, JSON.stringify({ acp_permission_0: { action: "accept" } }));
    const r = run("permission", ["--answer", answers]);
    assert.deepEqual(r.payload("runtime_request.resolved").resolution, {
      optionId: "allow",
      optionKind: "allow_once",
      allowed: true,
    });
    assert.equal(r.status, 0);
    await noOrphans(r);
  });

  it("permission allowed: a semantic input receipt and its result; the run proposes needs_review", async () => {
    const answers = join(dir, "allow.json");
    writeFileSync(answers, JSON.stringify({ acp_permission_0: { action: "accept" } }));
    const r = run("permission", ["--answer", answers]);
    assert.equal(r.types.filter((t) => t === "semantic_tool.input").length, 1);
    assert.equal(r.payload("semantic_tool.result").semantic_tool.outcome, "succeeded");
    assert.deepEqual(r.payload("semantic_tool.input").input, { command: "npm install" });
    assert.equal(r.terminal.reportedWorkDisposition, "needs_review");
    await noOrphans(r);
  });

  it("question, answered from --answer with a question response: the agent gets accept with the content", async () => {
    const answers = join(dir, "question.json");
    writeFileSync(
      answers,
      JSON.stringify({
        acp_question_0: {
          action: "submit",
          response: {
            schema: "paperclip.question_response.v1",
            answers: {
              [questionId(1, "deploy_target")]: { selectedOptionIds: ["option-1"] },
              [questionId(2, "preferred_name")]: { text: "Grace" },
            },
          },
        },
      }),
    );
    const r = run("question", ["--answer", answers]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.payload("runtime_request.created").request.schema, "paperclip.runtime_request.v2");
    assert.match(
      r.payload("run.result.proposed").summary,
      /question answer: accept \{"deploy_target":"staging","preferred_name":"Grace"\}/,
    );
    await noOrphans(r);
  });

  it("question off a terminal with no answers: the deny policy cancels it, as an event", async () => {
    const r = run("question");
    assert.deepEqual(r.payload("runtime_request.cancelled").decidedBy, { by: "policy", policy: "deny" });
    assert.match(r.payload("run.result.proposed").summary, /question answer: cancel$/);
    await noOrphans(r);
  });

  for (const scenario of ["permission", "question"]) {
    it(`--permission-policy forbid: the ${scenario} request fails the run closed (request_forbidden), exit status 1`, async () => {
      const r = run(scenario, ["--permission-policy", "forbid"]);
      assert.equal(r.status, 1);
      assert.deepEqual(
        [...states(r), r.terminal.stopReason.code],
        ["failed", "failed", "harness_protocol_violation", "request_forbidden"],
      );
      await noOrphans(r);
    });
  }

  it("--agent-idle-ms: an agent silent during its turn fails the run with agent_timeout, exit status 1, and is ended", async () => {
    const cwd = mkdtempSync(join(dir, "silent-"));
    const log = join(cwd, "agent.log");
    const r = run("silent-prompt", ["--agent-idle-ms", "500"], hostileAgent("silent-prompt", log), cwd);
    assert.equal(r.status, 1, r.stderr);
    assert.deepEqual(
      [...states(r), r.terminal.stopReason.code],
      ["failed", "failed", "harness_protocol_violation", "agent_timeout"],
    );
    assert.match(r.terminal.stopReason.message, /sent nothing for 500 ms during session\/prompt/);
    assert.equal(agentPids(log).length, 1);
    await noAgentLeft(log);
  });

  it("--help of prp run, prp demo and prp-runnerd names --agent-idle-ms", () => {
    const runnerd = spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), "--help"], {
      encoding: "utf8",
    }).stdout;
    for (const help of [runPrp(["run", "--help"]).stdout, runPrp(["demo", "--help"]).stdout, runnerd])
      assert.match(help, /--agent-idle-ms <n>/);
  });

  it("--help of prp run, prp demo and prp-runnerd names every permission policy, forbid included", () => {
    const runnerd = spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), "--help"], {
      encoding: "utf8",
    }).stdout;
    for (const help of [runPrp(["run", "--help"]).stdout, runPrp(["demo", "--help"]).stdout, runnerd]) {
      for (const policy of ["ask", "deny", "allow-reads", "forbid"]) assert.match(help, new RegExp(`"${policy}"`));
      assert.match(help, /forbid\s+\(the\s+agent\s+must\s+never\s+ask/);
    }
  });

  it("permission off a terminal with no answers: the deny policy refuses it, as an event", async () => {
    const r = run("permission");
    assert.deepEqual(r.payload("runtime_request.resolved").decidedBy, { by: "policy", policy: "deny" });
    assert.equal(r.payload("runtime_request.resolved").resolution.optionKind, "reject_once");
    await noOrphans(r);
  });

  it("permission under allow-reads: an execute call is refused", async () => {
    const r = run("permission", ["--permission-policy", "allow-reads"]);
    assert.deepEqual(r.payload("runtime_request.resolved").decidedBy, { by: "policy", policy: "allow-reads" });
    assert.equal(r.payload("runtime_request.resolved").resolution.allowed, false);
    await noOrphans(r);
  });

  for (const [scenario, code, reason] of [
    ["agent-error", "agent_internal_error", "semantic_result_missing"],
    // A missing login is also a typed start cause: stopReason agent_start / authentication_required.
    ["auth-required", "authentication_required", "harness_process_failed"],
    ["crash", "agent_exited", "harness_process_failed"],
  ] as const) {
    it(`${scenario}: turn.failed ${code}, the run failed, exit status 1`, async () => {
      const r = run(scenario);
      assert.equal(r.status, 1);
      assert.equal(r.payload("turn.failed").code, code);
      assert.deepEqual(states(r), ["failed", "failed", reason]);
      if (scenario === "auth-required") {
        assert.deepEqual([r.terminal.stopReason?.kind, r.terminal.stopReason?.code], ["agent_start", code]);
        assert.match(
          r.stderr,
          /cannot start the agent: authentication_required — the agent needs a login or key: log it in/,
        );
      }
      await noOrphans(r);
    });
  }

  it("malformed-update: three diagnostics, the run still succeeds", async () => {
    const r = run("malformed-update");
    assert.equal(r.types.filter((t) => t === "harness.diagnostic").length, 3);
    assert.equal(r.status, 0);
    await noOrphans(r);
  });

  it("long-stream: 2000 deltas", async () => {
    const r = run("long-stream");
    assert.equal(r.types.filter((t) => t === "item.delta").length, 2000);
    assert.equal(r.status, 0);
    await noOrphans(r);
  });

  it("killed-once: the agent dies by a signal mid-turn; a replacement loads the session from its store and finishes the turn", async () => {
    const cwd = join(dir, "killed-once");
    mkdirSync(cwd);
    const r = run("killed-once", [], `${testAgentCommand("killed-once")} --session-dir ${join(cwd, "sessions")}`, cwd);
    assert.equal(r.types.filter((t) => t === "harness.ready").length, 2, r.types.join(", "));
    assert.equal(r.payload("session.resumed").driverSessionId, r.payload("session.started").driverSessionId);
    assert.deepEqual(states(r), ["completed", "succeeded", "successful_process_and_result"]);
    assert.equal(r.status, 0);
    for (const e of r.events.filter((x) => x.eventType === "harness.ready")) {
      const pid = (e.payload as Record<string, number>).pid!;
      await until(
        () => liveGroupMembers(pid).length === 0,
        () => `no live process in agent group ${pid}: ${describeProcesses(liveGroupMembers(pid))}`,
      );
    }
  });

  it("linger: an agent that outlives its stdin is ended after its turn; the run succeeds", async () => {
    const r = run("linger");
    assert.deepEqual([r.payload("harness.exited").signal, r.payload("harness.exited").success], ["SIGTERM", true]);
    assert.equal(r.status, 0);
    await noOrphans(r);
  });

  for (const scenario of ["cancel", "working"])
    it(`${scenario}: Ctrl-C mid-turn sends turn.interrupt; the agent is cancelled and its group ends`, async () => {
      ran.add(scenario);
      const child = spawn(
        process.execPath,
        [
          join(packageRoot(), "bin/prp.js"),
          "run",
          "--json",
          "--agent-command",
          testAgentCommand(scenario),
          "--prompt",
          "x",
          "--out",
          dir,
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
      child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
      const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
      try {
        await until(
          () => stdout.includes('"item.delta"'),
          () => `the agent's first delta\n${stderr}`,
        );
        child.kill("SIGINT");
        const status = await within(closed, 30_000, "prp run to exit after Ctrl-C");
        const r = parse(status, stdout, stderr);
        assert.deepEqual(r.payload("turn.interrupted"), { reason: "operator", stopReason: "cancelled" });
        assert.deepEqual(states(r), ["interrupted", "cancelled", "turn_interrupted"]);
        await noOrphans(r);
      } finally {
        child.kill("SIGKILL");
      }
    });

  // prp run has no controller to send a follow-up: the scenarios' own prompt is all they answer (the steer: acp-durable.test.ts).
  it("follow-up and follow-up-error without a follow-up: the prompt is said back; an error fails the turn once", async () => {
    const answered = run("follow-up");
    assert.deepEqual(states(answered), ["completed", "succeeded", "successful_process_and_result"], answered.stderr);
    assert.equal(answered.payload("run.result.proposed").summary, "you said: Fix the failing test.");
    const failed = run("follow-up-error");
    assert.equal(states(failed)[1], "failed", failed.stderr);
    assert.equal(failed.types.filter((t) => t === "turn.failed").length, 1);
    assert.ok(
      !failed.types.includes("harness.diagnostic") ||
        !failed.events.some((e) => (e.payload as any).code === "acp_follow_up_dropped"),
      "nothing was queued, so nothing is dropped",
    );
  });

  it("every test-agent scenario ran in local mode here", () => {
    const all = readdirSync(acpScenariosDir())
      .filter((f) => f.endsWith(".json"))
      .map((f) => f.slice(0, -".json".length));
    assert.deepEqual(
      all.filter((s) => !ran.has(s)),
      [],
    );
  });

  it("usage: an agent needs --prompt, and --script and an agent exclude each other", () => {
    assert.match(runPrp(["run", "--agent-command", "x"]).stderr, /needs --prompt/);
    assert.match(runPrp(["run", "--agent", "claude"]).stderr, /needs --prompt/);
    assert.match(
      runPrp(["run", "--agent-command", "x", "--prompt", "y", "--script", "happy-path"]).stderr,
      /choose one/,
    );
    assert.equal(runPrp(["run"]).status, 2);
  });

  it("usage: --agent takes a catalog name; an unknown one is refused, listing the names; --agent-command conflicts", () => {
    const unknown = runPrp(["run", "--agent", "npx -y some-agent", "--prompt", "y"]);
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /no agent named "npx -y some-agent": the catalog has claude, codex, gemini, opencode/);
    assert.match(unknown.stderr, /--agent-command/);
    const both = runPrp(["run", "--agent", "claude", "--agent-command", "x", "--prompt", "y"]);
    assert.equal(both.status, 2);
    assert.match(both.stderr, /--agent <name>.*cannot be used with.*--agent-command/);
    const demoBoth = runPrp(["demo", "--agent", "codex", "--agent-command", "x", "--prompt", "y"]);
    assert.equal(demoBoth.status, 2);
    assert.match(runPrp(["demo", "--agent", "nope", "--prompt", "y"]).stderr, /no agent named "nope"/);
  });
});
