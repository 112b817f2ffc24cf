import type { RunRow } from "./api-types.js";
import type { RunFacts } from "./run-facts.js";

const stringOr = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);

/** A run's line in the list, from the facts folded from its events. */
export function runRow(runId: string, facts: RunFacts): RunRow {
  const { firstAt: first, lastAt: last, terminal } = facts;
  return {
    runId,
    state: terminal ? (stringOr(terminal.runTerminalState) ?? "ended") : "live",
    harness: facts.harness,
    startedAt: first,
    durationMs: first && last ? Math.max(0, Date.parse(last) - Date.parse(first)) : null,
    eventCount: facts.eventCount,
    disposition: stringOr(terminal?.reportedWorkDisposition) ?? facts.proposedDisposition,
  };
}
