import type { SessionSnapshot } from "./snapshot.js";

/** The compact cross-language parity oracle (wire.md §15.3), keys in this order. */
export interface ParitySummary {
  /** The identity's run; null for a bare event stream, which carries no identity. */
  runId: string | null;
  integrity: SessionSnapshot["integrity"];
  timelineCount: number;
  duplicateEventIds: string[];
  gaps: SessionSnapshot["gaps"];
  /** Both terminal states come from the terminal payload; null when none was applied. */
  turnTerminalState: string | null;
  runTerminalState: string | null;
}

export function paritySummary(snapshot: SessionSnapshot): ParitySummary {
  return {
    runId: snapshot.identity?.runId ?? null,
    integrity: snapshot.integrity,
    timelineCount: snapshot.timeline.length,
    duplicateEventIds: [...snapshot.duplicateEventIds],
    gaps: structuredClone(snapshot.gaps),
    turnTerminalState: snapshot.terminal?.turnTerminalState ?? null,
    runTerminalState: snapshot.terminal?.runTerminalState ?? null,
  };
}
