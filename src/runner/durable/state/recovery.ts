import { NO_RECOVERY, type ProviderRecovery } from "../provider-recovery.js";
import type { StateHandle } from "./handle.js";

/**
 * What a restarted runner resumes from: the provider recovery record (runtime.md §8.3) and the
 * last capability and goal events, which a replacement process sends again (runtime.md §9).
 */
export class StateRecovery {
  constructor(private readonly h: StateHandle) {}

  /** The provider recovery record: what a restarted runner resumes its harness's session from. */
  recovery(): ProviderRecovery {
    const r = this.h.sql("SELECT * FROM provider_recovery WHERE id = 1").get() as
      | { driver_session_id: string | null; load_session: number | null; turn_id: string | null; turn_ended: number }
      | undefined;
    if (!r) return NO_RECOVERY;
    return {
      driverSessionId: r.driver_session_id,
      loadSession: r.load_session === null ? null : r.load_session === 1,
      turnId: r.turn_id,
      turnEnded: r.turn_ended === 1,
    };
  }

  /** Merges `change` into the record. */
  update(change: Partial<ProviderRecovery>): void {
    const r = { ...this.recovery(), ...change };
    this.h
      .sql(
        "INSERT OR REPLACE INTO provider_recovery (id, driver_session_id, load_session, turn_id, turn_ended) VALUES (1, ?, ?, ?, ?)",
      )
      .run(r.driverSessionId, r.loadSession === null ? null : Number(r.loadSession), r.turnId, Number(r.turnEnded));
  }

  /** Keeps a capability or goal event's payload in place of the last one of its kind. */
  retain(eventType: string, payload: Record<string, unknown>): void {
    this.h
      .sql("INSERT OR REPLACE INTO v2_replay_events (slot, event_type, payload) VALUES (?, ?, ?)")
      .run(eventType === "session.capabilities.updated" ? "capability" : "goal", eventType, JSON.stringify(payload));
  }

  /** The last capability event, then the last goal event, as committed: what a replacement process sends again. */
  retainedGoalEvents(): Array<{ eventType: string; payload: Record<string, unknown> }> {
    const rows = this.h.sql("SELECT event_type, payload FROM v2_replay_events ORDER BY slot").all() as Array<{
      event_type: string;
      payload: string;
    }>;
    return rows.map((r) => ({ eventType: r.event_type, payload: JSON.parse(r.payload) as Record<string, unknown> }));
  }
}
