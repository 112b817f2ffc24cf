import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { FakeHarness, type Script } from "../../src/harness/fake-harness.js";
import { GoalJournal } from "../../src/harness/goal-journal.js";
import {
  COMMAND_SCHEMA,
  parseHarnessCommand,
  type HarnessCommandPayloads,
  type HarnessCommandType,
} from "../../src/harness/harness-protocol.js";

const root = mkdtempSync(join(tmpdir(), "prp-goal-journal-"));
after(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const journalPath = () => join(root, `journal-${++dirs}.jsonl`);

const command = <K extends HarnessCommandType>(commandSeq: number, type: K, payload: HarnessCommandPayloads[K]) => {
  const parsed = parseHarnessCommand(JSON.stringify({ schema: COMMAND_SCHEMA, commandSeq, type, payload }));
  assert.ok(parsed, `the harness refuses ${type}`);
  return parsed;
};

const SCRIPT: Script = {
  schema: "paperclip.fake_harness.script.v1",
  name: "goal-answers",
  steps: [
    { kind: "event", event_type: "item.started", item_id: "item_1", payload: { kind: "command", text: "" } },
    { kind: "await_goal_command" },
    { kind: "event", event_type: "item.completed", item_id: "item_1", payload: { kind: "command", text: "one" } },
    { kind: "event", event_type: "item.started", item_id: "item_2", payload: { kind: "command", text: "" } },
    { kind: "exit", code: 0 },
  ],
} as unknown as Script;

interface Line {
  messageSeq: number;
  type: string;
  payload: Record<string, unknown>;
}

/** Plays SCRIPT with these commands already queued; returns every line it wrote. */
async function play(journal: string | undefined, commands: ReturnType<typeof command>[]): Promise<Line[]> {
  const lines: Line[] = [];
  const harness = new FakeHarness(
    SCRIPT,
    { writeStdout: (l) => lines.push(JSON.parse(l) as Line), writeStderr: () => {}, exit: () => {} },
    { delayMs: 0, commandWaitMs: 1_000, resolutionWaitMs: 1_000, ...(journal ? { journalPath: journal } : {}) },
  );
  for (const c of commands) harness.receive(c);
  await harness.run();
  return lines;
}

const GOAL = { objective: "Ship it", status: "active", workingNow: false, tokenBudget: null };
const describeLine = (l: Line) =>
  `${l.messageSeq} ${l.type === "event" ? (l.payload.eventType as string) : l.type === "goal" ? `goal ${l.payload.change as string} ${l.payload.goal ? (l.payload.goal as { objective: string }).objective : "none"}` : l.type}`;

describe("a replacement fake harness accounts for its predecessor's goal answers (goal-journal.ts)", () => {
  it("numbers its replay past them, resumes with the goal they set, answers the runner's get after the resume with it, and loses no script message", async () => {
    const path = journalPath();
    // The first harness: the runner's get after the open, then a controller's set.
    const first = await play(path, [
      command(1, "session.open", { normalizedSessionId: "session_1", driverSessionId: "driver_1" }),
      command(2, "session.goal.get", {}),
      command(3, "turn.start", { turnId: "turn_1" }),
      command(4, "session.goal.set", { objective: "Ship it" }),
    ]);
    assert.deepEqual(first.map(describeLine), [
      "1 ready",
      "2 goal snapshot none",
      "3 goal updated Ship it",
      "4 session.started",
      "5 runtime.phase.changed",
      "6 turn.started",
      "7 item.started",
      "8 item.completed",
      "9 item.started",
    ]);
    // The runner received up to message 8 when the harness died; a replacement resumes there.
    const second = await play(path, [
      command(1, "session.open", {
        normalizedSessionId: "session_1",
        driverSessionId: "driver_1",
        resumeAfterMessageSeq: 8,
      }),
      command(2, "session.goal.get", {}),
      command(3, "turn.start", { turnId: "turn_1" }),
    ]);
    assert.deepEqual(
      second.map(describeLine),
      ["1 ready", "9 goal snapshot Ship it", "10 item.started"],
      "the goal its predecessor was told, then the script's next message",
    );
    assert.deepEqual(second[1]!.payload.goal, GOAL);
    assert.deepEqual(
      readFileSync(path, "utf8")
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { messageSeq: number }).messageSeq),
      [2, 3, 9],
      "each answer noted with its number",
    );
  });

  it("a new session starts a new journal", async () => {
    const path = journalPath();
    writeFileSync(path, `${JSON.stringify({ messageSeq: 2, goal: GOAL })}\n`);
    const lines = await play(path, [
      command(1, "session.open", { normalizedSessionId: "session_1", driverSessionId: "driver_2" }),
      command(2, "session.goal.get", {}),
      command(3, "turn.start", { turnId: "turn_1" }),
    ]);
    assert.equal(describeLine(lines[1]!), "2 goal snapshot none", "the earlier session's goal is not this one's");
    assert.deepEqual(
      readFileSync(path, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as unknown),
      [{ messageSeq: 2, goal: null }],
    );
  });

  it("skips a torn last line (an answer noted but never sent) and refuses a damaged one before it", () => {
    const path = journalPath();
    writeFileSync(
      path,
      `${JSON.stringify({ messageSeq: 2, goal: null })}\n${JSON.stringify({ messageSeq: 5, goal: GOAL })}\n{"messageSeq": 7, "go`,
    );
    assert.deepEqual(
      [...new GoalJournal(path).answersUpTo(9)],
      [
        [2, null],
        [5, GOAL],
      ],
    );
    assert.deepEqual(
      [...new GoalJournal(path).answersUpTo(4)],
      [[2, null]],
      "answers after the resume point are not the predecessor's",
    );
    appendFileSync(path, `\n${JSON.stringify({ messageSeq: 9, goal: null })}\n`);
    assert.throws(() => new GoalJournal(path).answersUpTo(9), SyntaxError);
    assert.deepEqual([...new GoalJournal(join(root, "none.jsonl")).answersUpTo(9)], [], "no journal: no answers");
    assert.deepEqual([...new GoalJournal(undefined).answersUpTo(9)], []);
  });
});
