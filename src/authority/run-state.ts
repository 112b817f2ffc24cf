import type { DispatchRow, RunState } from "./store.js";

/**
 * A run's one state, from its cursor and its dispatch row: the run's own terminal wins, then an
 * ended dispatch (cancelled while queued, its worker lost too often, its runner gone), then the
 * queue, then its events. A run registered by hand has no dispatch row: pending, running, ended.
 */
export function runStateOf(
  run: { ackedSourceSeq: number; terminalSourceSeq: number | null },
  dispatch: Pick<DispatchRow, "state"> | null,
): RunState {
  if (run.terminalSourceSeq !== null || dispatch?.state === "ended") return "ended";
  if (dispatch?.state === "queued") return "queued";
  if (run.ackedSourceSeq > 0) return "running";
  return dispatch?.state === "claimed" ? "claimed" : "pending";
}
