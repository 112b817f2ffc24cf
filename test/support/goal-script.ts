import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { GOAL_EVENTS } from "../../src/contract/version-gates.js";
import { result } from "../contract/samples.js";

/**
 * A fake harness script that waits for `commands` goal commands (await_goal_command steps: on v2
 * and later the runner's own get after the open is the first), then
 * either ends the turn and exits 0, or (`hold`) waits for an interrupt: a runner restart finds it
 * still working. Written as `goals-<commands>.json` under `dir`; returns its path.
 */
export function writeGoalScript(dir: string, commands: number, hold = false): string {
  const end = hold
    ? [{ kind: "await_interrupt" }]
    : [
        {
          kind: "event",
          event_type: "item.started",
          item_id: "item_after_goals",
          payload: { kind: "command", text: "" },
        },
        { kind: "result", payload: result() },
        { kind: "event", event_type: "turn.completed", payload: {} },
        {
          kind: "terminal",
          payload: {
            schema: "paperclip.prp.terminal.v1",
            turnTerminalState: "completed",
            runTerminalState: "succeeded",
            reportedWorkDisposition: "done",
          },
        },
        { kind: "exit", code: 0 },
      ];
  const script = {
    schema: "paperclip.fake_harness.script.v1",
    name: `goals-${commands}`,
    steps: [...Array.from({ length: commands }, () => ({ kind: "await_goal_command" })), ...end],
  };
  const path = join(dir, `goals-${commands}${hold ? "-held" : ""}.json`);
  writeFileSync(path, JSON.stringify(script));
  return path;
}

/** The session goal events of a stream, as `type payload` lines: what a reader of the goal trail sees. */
export const goalTrail = (events: readonly PrpEvent[]): string[] =>
  events.filter((e) => GOAL_EVENTS.has(e.eventType)).map((e) => `${e.eventType} ${JSON.stringify(e.payload)}`);

/**
 * What is wrong with a stream's session goal events, as reasons (none when right): each goal
 * event once (by sourceEventId), in sourceSeq order, under a v2+ envelope whose version is the
 * negotiated one, and none at all on a v1 connection (wire.md D2, O1).
 */
export function goalEventProblems(events: readonly PrpEvent[], negotiated: number): string[] {
  const out: string[] = [];
  const goals = events.filter((e) => GOAL_EVENTS.has(e.eventType));
  if (negotiated < 2)
    return goals.map((e) => `${e.eventType} at sourceSeq ${e.sourceSeq} on a v${negotiated} connection`);
  const ids = new Set<string>();
  let last = 0;
  for (const e of goals) {
    if (ids.has(e.sourceEventId)) out.push(`${e.eventType} ${e.sourceEventId} committed twice`);
    ids.add(e.sourceEventId);
    if (e.sourceSeq <= last) out.push(`${e.eventType} at sourceSeq ${e.sourceSeq} is out of order (after ${last})`);
    last = e.sourceSeq;
    if (e.schemaVersion !== negotiated || e.schema !== `paperclip.prp.event.v${negotiated}`)
      out.push(`${e.eventType} at sourceSeq ${e.sourceSeq} is a ${e.schema} envelope, not v${negotiated}`);
  }
  return out;
}
