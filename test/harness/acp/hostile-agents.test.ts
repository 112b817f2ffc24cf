import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { driveAgent, type DriveOptions, type Driven } from "./drive-agent.js";
import { agentLog, agentPids, hostileAgent, noAgentLeft, nonePending } from "./hostile-agent-support.js";
import { ranSandboxed } from "./pid-namespace.js";
import { isAgentStartCause } from "../../../src/agents/start-causes.js";

type Obj = Record<string, any>;
const states = (r: Driven) => [
  r.terminal.turnTerminalState,
  r.terminal.runTerminalState,
  r.terminal.reconciliation.reason,
];
const isEvent = (x: unknown): x is PrpEvent => typeof x === "object" && x !== null && "eventType" in x;

/** The agent ran in the harness sandbox: its own record names a PID namespace that is not the test's. */
const inSandbox = (log: string) =>
  assert.ok(ranSandboxed(log), `the agent ran in a PID namespace of its own: ${agentLog(log).join(", ")}`);

describe("hostile ACP agents in the local runner", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-acp-hostile-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  /** A fresh cwd and log for one run of `mode`. */
  const setup = (mode: string) => {
    const cwd = mkdtempSync(join(dir, `${mode}-${++n}-`));
    return { cwd, log: join(cwd, "agent.log"), command: hostileAgent(mode, join(cwd, "agent.log")) };
  };

  it("bait-and-switch (sandbox on): an allow for the dead agent's request never reaches its replacement's request with the same JSON-RPC id", async () => {
    const { cwd, log, command } = setup("bait-switch");
    let first: string | null = null;
    const r = await driveAgent("bait-switch", {
      cwd,
      command,
      sandbox: true,
      timeoutMs: 30_000,
      react: (x, send) => {
        if (isEvent(x) && x.eventType === "runtime_request.created") {
          const id = (x.payload as Obj).request.requestId as string;
          if (first === null) first = id;
          // The person's allow for "Read README.md" arrives after the replacement asked for `rm -rf ~`.
          else send("request.resolve", { requestId: first, resolution: { action: "accept" } });
        }
        if (!isEvent(x) && x.type === "request.resolve") send("run.cancel", { reason: "operator" });
      },
    });
    const created = r.of("runtime_request.created").map((e) => e.payload as Obj);
    assert.deepEqual(
      created.map((p) => [p.providerRequest.id, p.request.prompt]),
      [
        [5, "Allow Read README.md?"],
        [5, "Allow run rm -rf ~?"],
      ],
    );
    const [readme, rm] = created.map((p) => p.request.requestId as string);
    assert.notEqual(readme, rm, "the two agents' requests have different PRP ids");
    const cancelled = r.of("runtime_request.cancelled").map((e) => e.payload as Obj);
    assert.ok(
      cancelled.some((c) => c.requestId === readme && /gone/.test(c.reason)),
      `the dead agent's request is cancelled: ${JSON.stringify(cancelled)}`,
    );
    assert.ok(
      r.types.indexOf("runtime_request.cancelled") < r.types.lastIndexOf("runtime_request.created"),
      "cancelled before the replacement asks",
    );
    assert.deepEqual(
      r.of("runtime_request.resolved").filter((e) => (e.payload as Obj).resolution?.allowed === true),
      [],
      "nothing was allowed",
    );
    const resolve = r.receipts.find((x) => x.type === "request.resolve")!;
    assert.deepEqual([resolve.status, resolve.code], ["rejected", "unknown_request"]);
    // The replacement's own record: the answer it got was never an allow.
    const answers = agentLog(log).filter((l) => l.startsWith("answer "));
    assert.equal(answers.filter((l) => l.includes('"optionId":"allow"')).length, 0, answers.join("\n"));
    assert.equal(agentPids(log).length, 2, "the first agent died and one replacement was started");
    inSandbox(log);
    nonePending(r.events);
    await noAgentLeft(log);
  });

  it("an agent that asks 10,000 permissions and ends its turn: every one is cancelled, none stays pending", async () => {
    const { cwd, log, command } = setup("flood");
    const r = await driveAgent("flood", { cwd, command, timeoutMs: 120_000 });
    assert.equal(r.of("runtime_request.created").length, 10_000);
    assert.equal(r.of("runtime_request.cancelled").length, 10_000);
    assert.ok(r.of("runtime_request.cancelled").every((e) => /the turn ended/.test((e.payload as Obj).reason)));
    nonePending(r.events);
    await noAgentLeft(log);
  });

  it("an agent slow to cancel (sandbox on) is ended by the driver: the turn is interrupted, no replacement starts and the prompt is not sent again", async () => {
    const { cwd, log, command } = setup("slow-cancel");
    const r = await driveAgent("slow-cancel", {
      cwd,
      command,
      sandbox: true,
      onFirstDelta: "turn.interrupt",
      driver: { settleMs: 300 },
      timeoutMs: 30_000,
    });
    assert.equal(agentPids(log).length, 1, `one agent process: ${agentLog(log).join(", ")}`);
    assert.equal(agentLog(log).filter((l) => l === "session/prompt").length, 1, "the prompt reached the agent once");
    assert.equal(r.of("harness.ready").length, 1);
    assert.equal(r.of("harness.exited").filter((e) => (e.payload as Obj).restarting).length, 0);
    assert.equal((r.of("turn.interrupted")[0]?.payload as Obj | undefined)?.reason, "operator", r.types.join(", "));
    assert.equal(r.of("turn.failed").length, 0);
    assert.deepEqual(states(r), ["interrupted", "cancelled", "turn_interrupted"]);
    inSandbox(log);
    await noAgentLeft(log);
  });

  /** A run the driver gives up on: failed closed, its stopReason typed, no agent left; `log` is the agent's record. */
  const givenUp = async (
    mode: string,
    code: string,
    message: RegExp,
    driver: DriveOptions["driver"] = {},
    sandbox = false,
  ) => {
    const { cwd, log, command } = setup(mode);
    const r = await driveAgent(mode, {
      cwd,
      command,
      driver: { settleMs: 500, ...driver },
      timeoutMs: 30_000,
      sandbox,
    });
    assert.deepEqual(
      [...states(r), r.terminal.stopReason?.code],
      // An agent that cannot start the run (another ACP version) is not a protocol violation: its cause is typed.
      ["failed", "failed", isAgentStartCause(code) ? "harness_process_failed" : "harness_protocol_violation", code],
      r.types.join(", "),
    );
    assert.match(r.terminal.stopReason.message, message);
    assert.equal(agentPids(log).length, 1, "no replacement agent");
    await noAgentLeft(log);
    return { ...r, log };
  };

  it("never answers initialize (sandbox off): the handshake deadline ends the run; the sandbox judge says it ran unsandboxed", async () => {
    const r = await givenUp("never-initialize", "agent_timeout", /did not answer initialize within 500 ms/, {
      handshakeMs: 500,
    });
    // The must-fail twin of every "sandbox on" check here: an agent run beside the test is refused.
    assert.equal(ranSandboxed(r.log), false, agentLog(r.log).join(", "));
  });

  it("never answers session/new: the handshake deadline ends the run", async () => {
    const r = await givenUp("never-session-new", "agent_timeout", /did not answer session\/new within 500 ms/, {
      handshakeMs: 500,
    });
    assert.equal(r.of("turn.started").length, 0, "no prompt was sent");
  });

  it("silent during the prompt (sandbox on): the idle deadline ends the run", async () => {
    const r = await givenUp(
      "silent-prompt",
      "agent_timeout",
      /sent nothing for 500 ms during session\/prompt/,
      { idleMs: 500 },
      true,
    );
    inSandbox(r.log);
  });

  it("closes its stdout but keeps running: the run ends, and the agent is ended", async () => {
    await givenUp("close-stdout", "agent_stdout_closed", /closed its stdout but kept running/);
  });

  it("writes a line that never ends: the run ends once the line passes the limit, not at its newline", async () => {
    await givenUp("endless-line", "agent_line_too_long", /longer than the 65536-byte limit/);
  });

  it("answers initialize with an ACP version this client does not speak: refused, typed", async () => {
    const r = await givenUp(
      "bad-version",
      "unsupported_protocol_version",
      /protocol version 999999; this client speaks only version 1/,
    );
    assert.equal(r.of("harness.ready").length, 0, "the agent was never ready");
    assert.equal(r.of("session.started").length, 0);
  });
});
