/** The events that end a turn, one for each way it can end: after one, the turn is over. */
export const TURN_ENDS: ReadonlySet<string> = new Set([
  "turn.completed",
  "turn.failed",
  "turn.interrupted",
  "turn.cancelled",
]);
