import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { runPrp } from "./run-cli.js";

/**
 * What a hostile agent writes to take over the terminal of whoever watches its run: set the
 * window title (OSC), return to the line's start and erase it, print a line of its own that
 * reads like the CLI's verdict, a C1 CSI (colour), a right-to-left override, DEL.
 */
const ATTACK = "\x1b]0;pwned\x07\r\x1b[2K\nRun succeeded\n\u009b31m\u202eevil\x7f";
/** Any of those characters raw in what the CLI printed: only the newline and the tab may pass. */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/u;

/** An ACP test agent that puts the attack in its message, a tool call's title, its plan and a permission request. */
function writeAttackScenario(dir: string): string {
  const update = (u: Record<string, unknown>) => ({ kind: "update", update: u });
  const toolCall = { toolCallId: "call_1", title: `title ${ATTACK}`, kind: "read" };
  const scenario = {
    schema: "prp_kit.acp_test_agent.scenario.v1",
    name: "terminal-escapes",
    description: "escape sequences in every text the CLI shows",
    steps: [
      update({ sessionUpdate: "plan", entries: [{ content: `plan ${ATTACK}`, priority: "high", status: "pending" }] }),
      update({ sessionUpdate: "tool_call", ...toolCall, status: "pending" }),
      {
        kind: "permission",
        toolCall,
        options: [
          { optionId: "allow", name: `allow ${ATTACK}`, kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      },
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `message ${ATTACK}` } }),
    ],
  };
  const path = join(dir, "terminal-escapes.json");
  writeFileSync(path, JSON.stringify(scenario));
  return path;
}

/** The output holds no raw control character, shows the attack visibly, and no line of it starts like the CLI's own verdict. */
function assertNeutral(output: string, what: string) {
  const raw = RAW_CONTROL.exec(output);
  assert.equal(
    raw,
    null,
    `${what} printed a raw control character U+${raw?.[0].codePointAt(0)!.toString(16).padStart(4, "0")}:\n${JSON.stringify(output)}`,
  );
  assert.match(output, /\\x1b\]0;pwned\\x07/, `${what} shows the escape sequence visibly`);
  assert.ok(
    !output.split("\n").some((line) => line.startsWith("Run succeeded")),
    `${what} let the agent start a line of its own:\n${output}`,
  );
}

/** JSON lines with no raw control character, whose values still carry the attack unchanged. */
function assertJsonLines(output: string, what: string) {
  assert.equal(RAW_CONTROL.exec(output), null, `${what} printed a raw control character`);
  const lines = output
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as unknown);
  assert.ok(
    lines.some((value) => JSON.stringify(value).includes(JSON.stringify(ATTACK).slice(1, -1))),
    `${what}: the attack's text survives as a value`,
  );
}

describe("text an agent controls never reaches a terminal raw", () => {
  let dir: string;
  let agent: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-escapes-"));
    agent = testAgentCommand(writeAttackScenario(dir));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("prp run --agent: the live view, and the record in --json and through prp replay", () => {
    const out = join(dir, "run");
    const human = runPrp(
      ["run", "--agent-command", agent, "--prompt", "go", "--permission-policy", "deny", "--out", out],
      {
        cwd: dir,
      },
    );
    assert.equal(human.status, 0, human.stderr);
    assert.match(human.stdout, /answer {3}.*message \\x1b/, "the agent's message is shown, escaped");
    assertNeutral(human.stdout + human.stderr, "prp run");

    const json = runPrp(
      ["run", "--json", "--agent-command", agent, "--prompt", "go", "--permission-policy", "deny", "--out", out],
      { cwd: dir },
    );
    assert.equal(json.status, 0, json.stderr);
    assertJsonLines(json.stdout, "prp run --json");

    const events = join(dir, "events.ndjson");
    writeFileSync(events, json.stdout);
    const replay = runPrp(["replay", "--events", events]);
    assert.equal(replay.status, 0, replay.stderr);
    assertNeutral(replay.stdout, "prp replay");
    const replayJson = runPrp(["replay", "--json", "--events", events]);
    assert.equal(RAW_CONTROL.exec(replayJson.stdout), null, "prp replay --json printed a raw control character");
    assert.ok(
      JSON.stringify(JSON.parse(replayJson.stdout)).includes(JSON.stringify(ATTACK).slice(1, -1)),
      "prp replay --json keeps the value",
    );
  });

  it("prp demo --agent, then prp events on its store, in lines and in --json", () => {
    const out = join(dir, "demo");
    mkdirSync(out, { recursive: true });
    const demo = runPrp(
      ["demo", "--agent-command", agent, "--prompt", "go", "--permission-policy", "deny", "--out", out],
      {
        cwd: dir,
      },
    );
    assert.equal(demo.status, 0, demo.stderr);
    assertNeutral(demo.stdout + demo.stderr, "prp demo");
    const command = /prp events (--store \S+ --server-key-file \S+ --run \S+)/.exec(demo.stdout);
    assert.ok(command, `prp demo says how to read its events:\n${demo.stdout}`);
    const args = command[1]!.split(" ");
    const lines = runPrp(["events", ...args]);
    assert.equal(lines.status, 0, lines.stderr);
    assert.match(lines.stdout, /\\x1b/, "prp events shows the attack escaped");
    assert.equal(RAW_CONTROL.exec(lines.stdout), null, "prp events printed a raw control character");
    const json = runPrp(["events", "--json", ...args]);
    assert.equal(json.status, 0, json.stderr);
    assertJsonLines(json.stdout, "prp events --json");
  });
});
