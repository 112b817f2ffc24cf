import type { PrpEvent } from "../contract/kinds.js";
import type { RunRow } from "./api-types.js";

const payloadOf = (event: PrpEvent | undefined): Record<string, unknown> => (event?.payload ?? {}) as Record<string, unknown>;
const stringOr = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);

/** A run's line in the list, from its events in delivery order. */
export function runRow(runId: string, events: readonly PrpEvent[]): RunRow {
  const find = (type: string) => events.find((e) => e.eventType === type);
  const terminal = payloadOf(find("run.terminal"));
  const ended = find("run.terminal") !== undefined;
  const first = events[0]?.emittedAt;
  const last = events.at(-1)?.emittedAt;
  return {
    runId,
    state: ended ? (stringOr(terminal.runTerminalState) ?? "ended") : "live",
    harness: stringOr(payloadOf(find("harness.starting")).command),
    startedAt: first ?? null,
    durationMs: first && last ? Math.max(0, Date.parse(last) - Date.parse(first)) : null,
    eventCount: events.length,
    disposition: stringOr(terminal.reportedWorkDisposition) ?? stringOr(payloadOf(find("run.result.proposed")).reportedWorkDisposition),
  };
}
