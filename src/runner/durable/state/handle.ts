import type Database from "better-sqlite3";
import { cutText } from "../../../contract/text-cut.js";
import { statementCache } from "../../../storage/private-sqlite.js";
import type { RunIdentity } from "../../../transport/index.js";

/** What this state belongs to; it must match exactly every time the state is opened. */
export interface StateBinding extends RunIdentity {
  maxOutboxBytes: number;
  p0ReserveBytes: number;
}

export type Lifecycle =
  | "connecting"
  | "ready"
  | "backpressure"
  | "draining"
  | "revoked"
  | "stopped"
  | "recoverable_failure"
  | "unrecoverable";

export interface StateCounters {
  lifecycle: Lifecycle;
  nextSourceSeq: number;
  ackedSourceSeq: number;
  lastControllerCommandSeq: number;
  compactedThroughControllerSeq: number;
  outboxBytes: number;
  peakOutboxBytes: number;
  backpressure: boolean;
}

const MAX_DIAGNOSTICS = 32;

/**
 * The one connection every part of the runner's state shares (outbox, command journal,
 * provider recovery), with the single-row counters and the diagnostics several parts touch
 * inside their transactions. A part is a small class over this handle.
 */
export class StateHandle {
  readonly sql: (text: string) => Database.Statement;

  constructor(
    readonly db: Database.Database,
    readonly binding: StateBinding,
  ) {
    this.sql = statementCache(db);
  }

  counters(): StateCounters {
    const r = this.sql("SELECT * FROM runner_state WHERE id = 1").get() as Record<string, number | string>;
    return {
      lifecycle: r.lifecycle as Lifecycle,
      nextSourceSeq: r.next_source_seq as number,
      ackedSourceSeq: r.acked_source_seq as number,
      lastControllerCommandSeq: r.last_controller_command_seq as number,
      compactedThroughControllerSeq: r.compacted_through_controller_seq as number,
      outboxBytes: r.outbox_bytes as number,
      peakOutboxBytes: r.peak_outbox_bytes as number,
      backpressure: r.backpressure === 1,
    };
  }

  setLifecycle(lifecycle: Lifecycle): void {
    this.sql("UPDATE runner_state SET lifecycle = ? WHERE id = 1").run(lifecycle);
  }

  /** The protocol version of the last connection's welcome; null before the first. */
  negotiatedVersion(): number | null {
    const row = this.sql("SELECT value FROM meta WHERE key = 'negotiated_version'").get() as
      { value: string } | undefined;
    return row ? Number(row.value) : null;
  }

  setNegotiatedVersion(version: number): void {
    this.sql("INSERT OR REPLACE INTO meta (key, value) VALUES ('negotiated_version', ?)").run(String(version));
  }

  /**
   * The sourceSeq of the run's committed run.terminal, sent or not, acknowledged or not; null
   * before it. It is committed in the terminal's own transaction, so a runner that finds it
   * knows the run is over, whatever its lifecycle says (a drain or revoke may follow the terminal).
   */
  terminalSourceSeq(): number | null {
    const row = this.sql("SELECT value FROM meta WHERE key = 'terminal_source_seq'").get() as
      { value: string } | undefined;
    return row ? Number(row.value) : null;
  }

  /** Keeps the newest 32 diagnostics; older ones go. */
  noteDiagnostic(code: string, message: string): void {
    this.sql("INSERT INTO diagnostics (code, message) VALUES (?, ?)").run(code, cutText(message, 1024));
    this.sql("DELETE FROM diagnostics WHERE id <= (SELECT MAX(id) FROM diagnostics) - ?").run(MAX_DIAGNOSTICS);
  }

  diagnostics(): Array<{ code: string; message: string }> {
    return this.sql("SELECT code, message FROM diagnostics ORDER BY id").all() as Array<{
      code: string;
      message: string;
    }>;
  }
}
