import { canonicalJson } from "../contract/canonical-json.js";
import type { PrpEvent } from "../contract/kinds.js";
import { GOAL_EVENTS } from "../contract/version-gates.js";
import type { Script, Step } from "../harness/fake-harness.js";
import type { GoalStep } from "../contract/generated/types.js";

/** Where a session is opened or resumed: the runner owes the capability and the goal after each (runtime.md §9). */
const OPENS = new Set(["session.started", "session.reconciled"]);
const GOAL_REPORTS = new Set(["session.goal.snapshot", "session.goal.updated", "session.goal.cleared"]);

/** A goal as text, so that two reports of one goal compare equal whatever their key order. */
const goalText = (goal: unknown): string => (goal === null || goal === undefined ? "none" : canonicalJson(goal));

/** The goals a script sets, in order: a session starts with none. */
function scriptGoals(script: Script): string[] {
  return [
    "none",
    ...(script.steps as Step[]).filter((s) => s.kind === "goal").map((s) => goalText((s as GoalStep).goal)),
  ];
}

/** Repeats in a row are one state: a snapshot after a resume, or a kept event the runner sends again, repeats the goal it reports. */
const collapsed = (states: string[]): string[] => states.filter((s, i) => i === 0 || s !== states[i - 1]);

/**
 * The session goal of a fault run, judged from the host's record against the script. A fault
 * run sends no goal command, so the goals it reports are exactly the script's: on v2 and later,
 * the states the goal events report (repeats in a row counted once) are the script's, from "none"
 * (a prefix of them when the fault cuts the harness short, and "none" again when a restarted
 * runner starts a new harness, which has no goal yet); after each open or resume the capability
 * and a goal snapshot come before the next one, unless the runner died first; and the goal after
 * a harness restart is the goal before it. On v1 there is no goal event at all.
 */
export function goalFindings(
  events: readonly PrpEvent[],
  script: Script,
  protocolVersion: number,
  cutShort: boolean,
): string[] {
  const goalEvents = events.filter((e) => GOAL_EVENTS.has(e.eventType));
  if (protocolVersion < 2)
    return goalEvents.map((e) => `unexpected: ${e.eventType} at sourceSeq ${e.sourceSeq} on a v${protocolVersion} run`);
  return [...announced(events), ...continuous(events), ...sameStates(events, script, cutShort)];
}

/** After each open or resume: the capability and a goal snapshot before the next open, unless a restarted runner (runner.reconciled) or a failed session comes first. */
function announced(events: readonly PrpEvent[]): string[] {
  const out: string[] = [];
  events.forEach((e, i) => {
    if (!OPENS.has(e.eventType)) return;
    const next = events.findIndex((later, j) => j > i && OPENS.has(later.eventType));
    const until = events.slice(i + 1, next === -1 ? undefined : next);
    if (until.some((later) => later.eventType === "runner.reconciled" || later.eventType === "session.failed")) return;
    if (!until.some((later) => later.eventType === "session.capabilities.updated"))
      out.push(`missing: session.capabilities.updated after ${e.eventType} at sourceSeq ${e.sourceSeq}`);
    if (!until.some((later) => later.eventType === "session.goal.snapshot"))
      out.push(`missing: session.goal.snapshot after ${e.eventType} at sourceSeq ${e.sourceSeq}`);
  });
  return out;
}

/** The first goal reported after a harness restart (session.reconciled) is the last one reported before it. */
function continuous(events: readonly PrpEvent[]): string[] {
  const out: string[] = [];
  let current: string | null = null;
  let resumedAt: number | null = null;
  for (const e of events) {
    if (e.eventType === "session.reconciled") resumedAt = e.sourceSeq;
    if (!GOAL_REPORTS.has(e.eventType)) continue;
    const reported = goalText(e.payload.goal);
    if (resumedAt !== null && current !== null && reported !== current)
      out.push(
        `goal lost across the harness restart at sourceSeq ${resumedAt}: ${current} before, ${reported} after (sourceSeq ${e.sourceSeq})`,
      );
    resumedAt = null;
    current = reported;
  }
  return out;
}

function sameStates(events: readonly PrpEvent[], script: Script, cutShort: boolean): string[] {
  const reported = collapsed(events.filter((e) => GOAL_REPORTS.has(e.eventType)).map((e) => goalText(e.payload.goal)));
  const expected = collapsed(scriptGoals(script));
  const restarted = events.some((e) => e.eventType === "runner.reconciled");
  // A restarted runner's new harness starts with no goal: a last "none" is its.
  const states = restarted && reported.length > 1 && reported.at(-1) === "none" ? reported.slice(0, -1) : reported;
  const prefix = states.length <= expected.length && states.every((s, i) => s === expected[i]);
  const fits = prefix && (cutShort || restarted || states.length === expected.length);
  return fits
    ? []
    : [
        `the goals reported are not the script's: reported ${states.join(" → ")}; the script sets ${expected.join(" → ")}`,
      ];
}
