import assert from "node:assert/strict";
import { decode } from "../../src/contract/index.js";
import { until } from "../support/until.js";

export interface PrpEventLine {
  sourceSeq: number;
  eventType: string;
  payload: Record<string, unknown>;
}

/** The NDJSON of `prp events --json`: each line must pass the codec as a PRP event. */
export function eventLines(stdout: string): PrpEventLine[] {
  return stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((line) => {
      const decoded = decode(line, { kind: "event" });
      assert.ok(decoded.ok, `prp events --json printed a line the codec refuses: ${line}`);
      return decoded.value as unknown as PrpEventLine;
    });
}

/** The judge of a whole run by its committed events: 1..N with no gap, one run.terminal, last, and its state. */
export function judgeRun(events: PrpEventLine[]): { runTerminalState: string; problems: string[] } {
  const problems: string[] = [];
  events.forEach((e, i) => {
    if (e.sourceSeq !== i + 1) problems.push(`event ${i + 1} has sourceSeq ${e.sourceSeq}`);
  });
  const terminals = events.filter((e) => e.eventType === "run.terminal");
  if (terminals.length !== 1) problems.push(`${terminals.length} run.terminal events`);
  if (events.at(-1)?.eventType !== "run.terminal")
    problems.push(`the last event is ${events.at(-1)?.eventType ?? "missing"}`);
  return { runTerminalState: String(terminals[0]?.payload.runTerminalState ?? "none"), problems };
}

/**
 * The permission-input script's two questions and the answers a person gives with
 * `prp authority command RUN request.resolve`: the harness waits for each (minutes, not the
 * 10 s it gives turn.start), so a run answered by hand, or across a daemon restart, still succeeds.
 */
export const PERMISSION_INPUT_ANSWERS = [
  ["request_permission_1", { action: "accept", choice: "allow" }],
  ["request_input_1", { action: "submit", text: "main" }],
] as const;

/** Waits for each question to be committed, then answers it through `send` (an admin command). */
export async function answerWhenAsked(
  committed: () => PrpEventLine[],
  send: (payload: Record<string, unknown>) => void,
  turnId: string,
  describe: () => string,
): Promise<void> {
  for (const [requestId, resolution] of PERMISSION_INPUT_ANSWERS) {
    const asked = () =>
      committed().some(
        (e) =>
          e.eventType === "runtime_request.created" &&
          (e.payload.request as { requestId?: string } | undefined)?.requestId === requestId,
      );
    await until(asked, () => `${requestId} to be asked; ${describe()}`, 60_000);
    send({ requestId, turnId, resolution });
  }
}
