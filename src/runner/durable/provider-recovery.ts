import { isPlainObject } from "../../contract/plain-object.js";
import { TURN_ENDS } from "../../contract/turn-ends.js";

/**
 * The provider recovery record (runtime.md §8.3): what a restarted durable runner needs to
 * resume its harness's session. It is read off the events the runner commits, in the same
 * transaction as each one, so it never says more than the authority was told, and never less.
 */
export interface ProviderRecovery {
  /** The harness's session (session.started / session.resumed `driverSessionId`), once it has one. */
  driverSessionId: string | null;
  /**
   * Whether the harness's agent said it can load a session in a new process (ACP
   * `loadSession`, from harness.ready); null when its harness.ready said nothing about an agent
   * (the fake harness), whose session dies with it.
   */
  loadSession: boolean | null;
  /** The run's turn once it was submitted, and whether it has ended. */
  turnId: string | null;
  turnEnded: boolean;
}

export const NO_RECOVERY: ProviderRecovery = {
  driverSessionId: null,
  loadSession: null,
  turnId: null,
  turnEnded: false,
};

type Obj = Record<string, unknown>;

/** What an admitted event changes in the record; null when it changes nothing. */
export function recoveryChange(event: {
  eventType: string;
  payload: Obj;
  turnId?: string | undefined;
}): Partial<ProviderRecovery> | null {
  const p = event.payload;
  switch (event.eventType) {
    case "harness.ready": {
      const agent = p.agent;
      return {
        loadSession: isPlainObject(agent)
          ? isPlainObject(agent.capabilities) && agent.capabilities.loadSession === true
          : null,
      };
    }
    case "session.started":
    case "session.resumed":
      return typeof p.driverSessionId === "string" && p.driverSessionId ? { driverSessionId: p.driverSessionId } : null;
    case "turn.submitted":
      return event.turnId ? { turnId: event.turnId, turnEnded: false } : null;
    default:
      return TURN_ENDS.has(event.eventType) ? { turnEnded: true } : null;
  }
}
