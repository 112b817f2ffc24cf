import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import {
  agentLog,
  agentPids,
  hostileAgent,
  noAgentLeft,
  nonePending,
  pendingRequests,
} from "../harness/acp/hostile-agent-support.js";
import { judgeEmojiCuts, writeDeepAgent, writeEmojiScenario } from "../harness/acp/leaky-agents.js";
import { ranSandboxed } from "../harness/acp/pid-namespace.js";
import { durableAgentRun, states, type DurableAgentRun } from "./acp-durable-support.js";
import { isAgentStartCause } from "../../src/agents/start-causes.js";

type Obj = Record<string, any>;

/*
 * The hostile agents of test/harness/acp/hostile-agents.test.ts and leaky-agents.test.ts, run
 * through prp-runnerd against an authority (in the runner's default sandbox), each judged from
 * the run's log as the authority's store holds it once the run is over.
 */
describe("hostile ACP agents in durable mode, judged from the authority's store", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-acp-hostile-durable-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A fresh cwd and log for one run of the hostile agent in `mode`. */
  const hostile = (mode: string) => {
    const cwd = mkdtempSync(join(dir, `${mode}-`));
    const log = join(cwd, "agent.log");
    return { cwd, log, command: hostileAgent(mode, log) };
  };
  const of = (r: DurableAgentRun, type: string) => r.stored.filter((e) => e.eventType === type);
  const inSandbox = (log: string) =>
    assert.ok(ranSandboxed(log), `the agent ran in a PID namespace of its own: ${agentLog(log).join(", ")}`);

  it("10,000 open permission requests: every one is cancelled with an event when the turn ends, none pending in the store's log; the judge refuses a log with one left", async () => {
    const agent = hostile("flood");
    const r = await durableAgentRun(dir, { ...agent, policy: "ask" });
    assert.equal(of(r, "runtime_request.created").length, 10_000);
    const cancelled = of(r, "runtime_request.cancelled").map((e) => e.payload as Obj);
    assert.equal(cancelled.length, 10_000);
    assert.ok(
      cancelled.every((c) => /the turn ended/.test(c.reason)),
      JSON.stringify(cancelled[0]),
    );
    assert.ok(
      r.types.lastIndexOf("runtime_request.cancelled") < r.types.indexOf("run.terminal"),
      "cancelled before the run's terminal",
    );
    nonePending(r.stored);
    inSandbox(agent.log);
    await noAgentLeft(agent.log);
    // The must-fail twin: the same log with one cancellation missing leaves exactly that request pending.
    const dropped = r.stored.find((e) => e.eventType === "runtime_request.cancelled")!;
    const oneLeft = r.stored.filter((e) => e !== dropped);
    assert.deepEqual(pendingRequests(oneLeft), [(dropped.payload as Obj).requestId]);
    assert.throws(() => nonePending(oneLeft), /no request is left pending/);
  });

  /** A run the driver gives up on: failed closed with a typed stopReason, no replacement, no agent left, sandboxed. */
  const givenUp = async (mode: string, code: string, message: RegExp, runnerArgs: string[] = []) => {
    const agent = hostile(mode);
    const r = await durableAgentRun(dir, { ...agent, runnerArgs });
    assert.deepEqual(
      [...states(r), r.terminal.stopReason?.code],
      // An agent that cannot start the run (another ACP version) is not a protocol violation: its cause is typed.
      ["failed", "failed", isAgentStartCause(code) ? "harness_process_failed" : "harness_protocol_violation", code],
      r.types.join(", "),
    );
    assert.match(r.terminal.stopReason.message, message);
    assert.equal(agentPids(agent.log).length, 1, "no replacement agent");
    inSandbox(agent.log);
    await noAgentLeft(agent.log);
    return r;
  };
  // The ACP handshake has the harness's time to say ready: short here, so that the deadline is what ends the run.
  const shortHandshake = ["--harness-ready-ms", "3000"];

  it("never answers initialize: the handshake deadline ends the durable run", async () => {
    const r = await givenUp(
      "never-initialize",
      "agent_timeout",
      /did not answer initialize within 3000 ms/,
      shortHandshake,
    );
    assert.equal(of(r, "session.started").length, 0);
  });

  it("never answers session/new: the handshake deadline ends the durable run, no prompt sent", async () => {
    const r = await givenUp(
      "never-session-new",
      "agent_timeout",
      /did not answer session\/new within 3000 ms/,
      shortHandshake,
    );
    assert.equal(of(r, "turn.started").length, 0, "no prompt was sent");
  });

  it("answers initialize with protocol version 999999: refused, typed, the agent never ready", async () => {
    const r = await givenUp(
      "bad-version",
      "unsupported_protocol_version",
      /protocol version 999999; this client speaks only version 1/,
    );
    assert.equal(of(r, "harness.ready").length, 0, "the agent was never ready");
    assert.equal(of(r, "session.started").length, 0);
  });

  for (const where of ["initialize", "prompt"] as const) {
    it(`a JSON line nested 32,000 deep (${where === "initialize" ? "as the initialize answer" : "inside the turn"}) ends the durable run with a typed protocol violation, not a stack overflow`, async () => {
      const cwd = mkdtempSync(join(dir, `deep-${where}-`));
      const log = join(cwd, "agent.log");
      const r = await durableAgentRun(dir, {
        command: `${process.execPath} ${writeDeepAgent(cwd)} ${where} ${log}`,
        cwd,
      });
      assert.deepEqual(
        [r.terminal.runTerminalState, r.terminal.reconciliation.reason, r.terminal.stopReason?.code],
        ["failed", "harness_protocol_violation", "protocol_error"],
      );
      assert.match(r.terminal.stopReason?.message ?? "", /nested deeper than the 64-level limit/);
      assert.doesNotMatch(JSON.stringify(r.stored), /RangeError|call stack/);
      assert.doesNotMatch(r.facts.runnerLogs.flat().join("\n"), /RangeError|call stack/);
      inSandbox(log);
    });
  }

  it("texts with an emoji across every cut point: the durable run succeeds, nothing refused, each text cut before its emoji", async () => {
    const cwd = mkdtempSync(join(dir, "emoji-"));
    const r = await durableAgentRun(dir, { command: testAgentCommand(writeEmojiScenario(cwd)), cwd });
    judgeEmojiCuts(r.stored);
  });
});
