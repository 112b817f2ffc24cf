import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import type * as T from "../contract/generated/types.js";

/** The file a fake harness notes its goal answers in; the runner names it (FakeHarnessDriver). */
export const FAKE_HARNESS_JOURNAL_ENV = "PRP_FAKE_HARNESS_JOURNAL";

export type Goal = T.SessionGoalSnapshot | null;

/**
 * The fake harness's record of the goal answers it sent, one JSON line each: the message number
 * and the goal it left. A replacement harness replays its script silently up to the last message
 * the runner received, but answers to goal commands are not in the script: without this record
 * it would number its replay short of its predecessor's messages and lose the goals those
 * commands set. A real harness keeps its session on disk the same way. Without a path (a person
 * running `prp fake-harness`) nothing is kept.
 */
export class GoalJournal {
  constructor(private readonly path: string | undefined) {}

  /** A new session: its predecessor's answers are not this one's. */
  reset(): void {
    if (this.path) writeFileSync(this.path, "", { mode: 0o600 });
  }

  /** Noted before the answer is sent: an answer that never left was numbered past what the runner received. */
  note(messageSeq: number, goal: Goal): void {
    if (this.path) appendFileSync(this.path, `${JSON.stringify({ messageSeq, goal })}\n`, { mode: 0o600 });
  }

  /**
   * The answers a predecessor sent, up to message `upTo`, by number. A last line without its
   * newline is skipped: the harness was killed while noting it, before sending that answer. Any
   * other damage is thrown, since a replay numbered from a damaged record would misplace every
   * message after it.
   */
  answersUpTo(upTo: number): Map<number, Goal> {
    const answers = new Map<number, Goal>();
    if (!this.path) return answers;
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return answers;
      throw err;
    }
    const lines = text.split("\n");
    lines.pop(); // "" after a complete last line, else the unsent answer
    for (const line of lines) {
      const entry = JSON.parse(line) as { messageSeq: number; goal: Goal };
      if (!Number.isSafeInteger(entry.messageSeq) || entry.goal === undefined)
        throw new Error(`fake harness journal ${this.path}: not an answer: ${line}`);
      if (entry.messageSeq <= upTo) answers.set(entry.messageSeq, entry.goal);
    }
    return answers;
  }
}
