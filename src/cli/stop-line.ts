import { STOP_REASON_KIND } from "../agents/start-causes.js";
import type * as T from "../contract/generated/types.js";
import { visible } from "./terminal-text.js";

/**
 * A terminal's stop reason in one line for a person: why an agent could not start (`cannot
 * start the agent: authentication_required — claude is not logged in: …`), or whose stop it was.
 * Its message may quote the agent: controls are shown, not played.
 */
export function stopReasonLine(stop: T.PRPStopReason | undefined): string | null {
  if (!stop) return null;
  const message = typeof stop.message === "string" && stop.message !== "" ? ` — ${visible(stop.message)}` : "";
  return stop.kind === STOP_REASON_KIND
    ? `cannot start the agent: ${visible(stop.code)}${message}`
    : `stop reason     ${visible(stop.kind)}: ${visible(stop.code)}${message}`;
}

/** The first lines of a run's end for a person: its states, whose call the ending was, and why it stopped. */
export function terminalSummary(runId: string, terminal: T.PRPRunTerminal): string[] {
  const stop = stopReasonLine(terminal.stopReason);
  return [
    `run ${runId}: ${terminal.turnTerminalState} / ${terminal.runTerminalState} (${terminal.reportedWorkDisposition})`,
    `  reconciliation  ${terminal.reconciliation?.reason ?? "-"}; harness exit ${JSON.stringify(terminal.reconciliation?.processExit ?? null)}`,
    ...(stop ? [`  ${stop}`] : []),
  ];
}
