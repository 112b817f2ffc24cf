import type { GoalOperation } from "../../harness/harness-driver.js";
import { eventEnvelopeVersion } from "../../contract/version-gates.js";

export type Timer = "ready" | "session_started" | "stall" | "stall_grace";

/** What the machine asks its shell to do, in order. */
export type RunEffect =
  /** `schemaVersion`: the envelope version, set only when the type needs more than v1 (wire.md O1). */
  | {
      kind: "emit";
      eventType: string;
      payload: Record<string, unknown>;
      turnId?: string;
      itemId?: string;
      fromHarness: boolean;
      schemaVersion?: number;
    }
  | { kind: "start_harness" }
  /** `resumeSessionId`: the session a restarted durable runner's new harness loads (warm resume). */
  | { kind: "open_session"; resume: boolean; resumeSessionId?: string }
  | { kind: "start_turn"; turnId: string; text?: string }
  /** A follow-up for the active turn: the harness sends it once the turn's prompt is answered. */
  | { kind: "steer"; text: string }
  | { kind: "interrupt"; reason: string }
  | { kind: "resolve_request"; requestId: string; resolution: Record<string, unknown> }
  | { kind: "goal"; operation: GoalOperation }
  | { kind: "stop_harness" }
  | { kind: "arm_timer"; timer: Timer; ms: number }
  | { kind: "disarm_timer"; timer: Timer }
  /** The command being applied has taken its effect (the durable runner then sends its result). */
  | { kind: "command_done" }
  /** The run's one terminal was emitted: nothing follows. */
  | { kind: "ended" };

export type StartTurn = Extract<RunEffect, { kind: "start_turn" }>;

/**
 * What was decided, with each event under the envelope version its type needs; an event the
 * negotiated version does not have is not reported at all (a v1 peer never sees a goal event).
 */
export function versioned(effects: RunEffect[], protocolVersion: number): RunEffect[] {
  const out: RunEffect[] = [];
  for (const effect of effects) {
    if (effect.kind !== "emit") {
      out.push(effect);
      continue;
    }
    const version = eventEnvelopeVersion(effect.eventType, protocolVersion);
    if (version === null) continue;
    out.push(version === 1 ? effect : { ...effect, schemaVersion: version });
  }
  return out;
}
