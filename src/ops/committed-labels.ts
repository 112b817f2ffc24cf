// What the metrics read from committed events, whose payloads the (untrusted) runner wrote.
import type { NewCommittedEvent } from "../authority/store.js";

/** The run terminal states of the contract (paperclip.prp.terminal.v1 runTerminalState). */
const STATES: ReadonlySet<string> = new Set(["succeeded", "failed", "cancelled"]);

/**
 * How a committed run.terminal ended the run, as two label values: its runTerminalState and
 * its stopReason.code ("none" without one). The code is written by the runner, which is
 * untrusted, so the caller still bounds it (BoundedLabel); a state off the contract is "other".
 */
export function terminalLabels(event: NewCommittedEvent): { state: string; reason: string } {
  const payload = payloadOf<{ runTerminalState?: unknown; stopReason?: { code?: unknown } }>(event);
  const state = typeof payload?.runTerminalState === "string" ? payload.runTerminalState : "";
  const code = payload?.stopReason?.code;
  return { state: STATES.has(state) ? state : "other", reason: typeof code === "string" ? code : "none" };
}

/** A committed harness.exited that says its runner restarts the harness (a crash within the restart limit). */
export const restarting = (event: NewCommittedEvent): boolean =>
  payloadOf<{ restarting?: unknown }>(event)?.restarting === true;

function payloadOf<T>(event: NewCommittedEvent): T | undefined {
  try {
    return (JSON.parse(event.envelope) as { payload?: T }).payload;
  } catch {
    return undefined; // committed envelopes are canonical JSON; this guards a bug, not a peer
  }
}
