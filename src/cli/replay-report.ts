import type { PrpEvent } from "../contract/index.js";
import { sourceKey, type SessionSnapshot } from "../reducer/index.js";
import { stopReasonLine } from "./stop-line.js";
import { visible } from "./terminal-text.js";

const MAX_TEXT = 100;

/** One line, at most MAX_TEXT characters: summaries and item texts can be long or multi-line. */
function oneLine(value: string): string {
  const flat = value.replace(/\s+/g, " ").trim();
  const chars = [...flat];
  return chars.length > MAX_TEXT ? `${chars.slice(0, MAX_TEXT - 1).join("")}…` : flat;
}

/** Left-aligned columns, two spaces apart, each row indented. */
function table(cells: string[][], indent = "  "): string[] {
  // Escaped before the widths are measured, so that the columns line up as printed.
  const rows = cells.map((r) => r.map(visible));
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  return rows.map((r) => indent + r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join("  "));
}

const field = (label: string, value: string): string => `  ${label.padEnd(13)} ${value}`;
const listOr = (values: string[], none = "none"): string => (values.length > 0 ? values.join(", ") : none);

function timeline(
  snapshot: SessionSnapshot,
  firstCopy: Map<string, PrpEvent>,
  deliveries: Map<string, number>,
): string[] {
  const lines = [`Timeline: ${snapshot.timeline.length} applied event${snapshot.timeline.length === 1 ? "" : "s"}`];
  if (snapshot.timeline.length === 0) return lines;
  const gapAt = new Map(snapshot.gaps.map((g) => [`${g.sourceKey}:${g.received}`, g]));
  const rows = [["#", "source:seq", "event", "summary"]];
  const notes = new Map<number, string>(); // row index → a callout printed above that row
  for (const entry of snapshot.timeline) {
    const key = `${sourceKey(firstCopy.get(entry.sourceEventId)!)}:${entry.sourceSeq}`;
    const gap = gapAt.get(key);
    if (gap)
      notes.set(
        rows.length,
        `! gap in ${gap.sourceKey}: expected seq ${gap.expected}, received ${gap.received}; missing ${gap.missing.join(", ")}`,
      );
    const times = deliveries.get(entry.sourceEventId)!;
    const repeat = times > 1 ? `  [delivered ${times} times, applied once]` : "";
    rows.push([String(entry.position), key, entry.eventType, oneLine(entry.summary) + repeat]);
  }
  table(rows).forEach((line, i) => {
    const note = notes.get(i);
    if (note) lines.push(`     ${note}`);
    lines.push(line);
  });
  return lines;
}

function state(s: SessionSnapshot): string[] {
  const lines = [
    "State",
    field("run phase", s.runPhase),
    field("session", s.sessionState),
    field("turn", s.turnState),
    field("active turn", s.activeTurnId ?? "none"),
    field("items", s.items.length === 0 ? "none" : String(s.items.length)),
  ];
  if (s.items.length > 0)
    lines.push(
      ...table(
        s.items.map((i) => [i.itemId, i.kind, i.status, JSON.stringify(oneLine(i.text))]),
        "    ",
      ),
    );
  lines.push(field("requests", s.requests.length === 0 ? "none" : String(s.requests.length)));
  if (s.requests.length > 0)
    lines.push(
      ...table(
        s.requests.map((r) => [r.requestId, r.type, r.status, JSON.stringify(oneLine(r.prompt))]),
        "    ",
      ),
    );
  return [...lines, ...beyondV1(s)];
}

/** One line per section beyond v1 that occurred. */
function beyondV1(s: SessionSnapshot): string[] {
  const lines: string[] = [];
  if (s.sessionCapabilities) lines.push(field("capabilities", oneLine(JSON.stringify(s.sessionCapabilities))));
  if (s.sessionGoal) {
    const goal = s.sessionGoal.goal;
    lines.push(
      field(
        "goal",
        goal
          ? `${goal.status}${goal.workingNow ? ", working now" : ""}: ${oneLine(goal.objective)}`
          : `none (after ${s.sessionGoal.lastEventType})`,
      ),
    );
  }
  if (s.usage) {
    const total = s.usage.runTotal;
    const figures = total
      ? `run total ${total.inputTokens ?? "?"} input / ${total.outputTokens ?? "?"} output tokens, cost ${total.providerCostUsd ?? "?"} USD`
      : "no run delta reported";
    lines.push(field("usage", `${s.usage.reports} report${s.usage.reports === 1 ? "" : "s"}; ${figures}`));
  }
  for (const p of s.plans ?? []) lines.push(field("plan", `${String(p.planId)} revision ${String(p.revision)}`));
  for (const t of s.toolExecutions ?? [])
    lines.push(field("tool", `${String(t.executionId)} ${String(t.name ?? t.operation ?? "")}: ${String(t.status)}`));
  for (const c of s.credentials ?? [])
    lines.push(field("credentials", `${c.provider}/${c.bindingId} revision ${c.revision} (${c.detection})`));
  for (const a of s.runtimeActivity ?? []) lines.push(field("activity", `${a.namespace}: ${a.activityKey}`));
  return lines;
}

function integrity(s: SessionSnapshot, firstCopy: Map<string, PrpEvent>, deliveries: Map<string, number>): string[] {
  const outOfOrder = s.outOfOrderEventIds.map((id) => {
    const e = firstCopy.get(id)!;
    return `${id} (${sourceKey(e)}:${e.sourceSeq}, at or behind the cursor; not applied)`;
  });
  return [
    `Integrity: ${s.integrity}`,
    field(
      "gaps",
      listOr(
        s.gaps.map(
          (g) => `${g.sourceKey} expected ${g.expected}, received ${g.received}, missing ${g.missing.join(", ")}`,
        ),
      ),
    ),
    field(
      "duplicates",
      listOr(s.duplicateEventIds.map((id) => `${id} (delivered ${deliveries.get(id)!} times, applied once)`)),
    ),
    field("out of order", listOr(outOfOrder)),
  ];
}

function result(s: SessionSnapshot): string[] {
  const r = s.proposedResult;
  const t = s.terminal;
  const lines = [
    "Result",
    field("proposed", r ? `${r.reportedWorkDisposition}: ${oneLine(r.summary)}` : "none"),
    field(
      "terminal",
      t ? `turn ${t.turnTerminalState}, run ${t.runTerminalState}, work ${t.reportedWorkDisposition}` : "none",
    ),
  ];
  const stop = stopReasonLine(t?.stopReason);
  if (stop) lines.push(`  ${stop}`);
  return lines;
}

/**
 * The replay of a run for a person: the timeline (position, source:seq, event type, summary)
 * with gaps and repeated deliveries called out where they happened, then session, turn and run
 * state, integrity, and the result. `events` are the delivered events the snapshot came from.
 * Every line is shown with its controls visible (terminal-text.ts): the agent wrote much of it.
 */
export function replayReport(snapshot: SessionSnapshot, events: readonly PrpEvent[]): string {
  const firstCopy = new Map<string, PrpEvent>();
  const deliveries = new Map<string, number>();
  for (const e of events) {
    if (!firstCopy.has(e.sourceEventId)) firstCopy.set(e.sourceEventId, e);
    deliveries.set(e.sourceEventId, (deliveries.get(e.sourceEventId) ?? 0) + 1);
  }
  const runId = snapshot.identity?.runId ?? events[0]?.runId ?? "unknown";
  const title =
    snapshot.fixtureName === null
      ? `Replay of an event stream, run ${runId}`
      : `Replay of fixture "${snapshot.fixtureName}", run ${runId}`;
  const sections = [
    [title],
    timeline(snapshot, firstCopy, deliveries),
    state(snapshot),
    integrity(snapshot, firstCopy, deliveries),
    result(snapshot),
  ];
  return `${sections.map((lines) => lines.map(visible).join("\n")).join("\n\n")}\n`;
}
