import { join } from "node:path";
import type Database from "better-sqlite3";
import { canonicalJson } from "../../contract/canonical-json.js";
import { sha256Hex } from "../../contract/digest.js";
import { isPlainObject } from "../../contract/plain-object.js";
import type { Priority } from "../../contract/priority.js";
import { MAX_FRAME_BYTES } from "../../contract/versions.js";
import { openPrivateDatabase, statementCache, StateError } from "../../storage/private-sqlite.js";
import type { RunIdentity } from "../../transport/index.js";
import type { CredentialStore } from "../credentials/credential-store.js";
import {
  CREDENTIAL_OBSERVER_SQL,
  credentialRowProblem,
  credentialRows,
  sqliteCredentialStore,
} from "../credentials/sqlite-credential-store.js";
import { NO_RECOVERY, type ProviderRecovery } from "./provider-recovery.js";
import { cutText } from "../../contract/text-cut.js";

export const STATE_SCHEMA = "paperclip.runner.durable.state.v1";
export const STATE_FILE = "runner-state.sqlite";

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
export type CommandStatus = "pending" | "completed" | "failed" | "rejected" | "indeterminate";

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

export type Admission =
  | { ok: true; sourceSeq: number; envelope: string }
  | {
      ok: false;
      code: "backpressure" | "p0_storage_exhausted" | "frame_too_large" | "event_too_large" | "state_unrecoverable";
      message: string;
    };

/** What to do with a command, decided and journaled before any effect (runtime.md §5.8). */
export type CommandDecision =
  | { kind: "execute" }
  | { kind: "replay"; status: CommandStatus; result: unknown }
  | { kind: "rejected"; code: string; message: string };

export interface JournalCommand {
  commandId: string;
  controllerSeq: number;
  type: string;
  issuedAt: string;
  deadlineAt?: string;
  payload: unknown;
  precondition?: unknown;
}

/** Defaults of runtime.md §15.2. */
export const DEFAULT_MAX_OUTBOX_BYTES = 16 * 1024 * 1024;
export const DEFAULT_P0_RESERVE_BYTES = 1024 * 1024;
export const JOURNAL_KEEP = 128;
export const MAX_RESULT_BYTES = 64 * 1024;
export const MAX_DIAGNOSTICS = 32;
const STATE_SLACK_BYTES = 16 * 1024 * 1024;

const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS binding (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  runner_instance_id TEXT NOT NULL, environment_lease_id TEXT NOT NULL, run_id TEXT NOT NULL,
  normalized_session_id TEXT NOT NULL, turn_id TEXT NOT NULL, item_id TEXT NOT NULL,
  max_outbox_bytes INTEGER NOT NULL, p0_reserve_bytes INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS runner_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  lifecycle TEXT NOT NULL, next_source_seq INTEGER NOT NULL, acked_source_seq INTEGER NOT NULL,
  last_controller_command_seq INTEGER NOT NULL, compacted_through_controller_seq INTEGER NOT NULL,
  outbox_bytes INTEGER NOT NULL, peak_outbox_bytes INTEGER NOT NULL, backpressure INTEGER NOT NULL,
  reconnect_count INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS outbox (
  source_seq INTEGER PRIMARY KEY, priority INTEGER NOT NULL, event_type TEXT NOT NULL,
  envelope TEXT NOT NULL, byte_size INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS processed_commands (
  command_id TEXT PRIMARY KEY, controller_seq INTEGER NOT NULL UNIQUE, command_type TEXT NOT NULL,
  status TEXT NOT NULL, result TEXT, fingerprint TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS provider_recovery (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  driver_session_id TEXT, load_session INTEGER, turn_id TEXT, turn_ended INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS v2_replay_events (
  slot TEXT PRIMARY KEY CHECK (slot IN ('capability', 'goal')), event_type TEXT NOT NULL, payload TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS diagnostics (
  id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, message TEXT NOT NULL) STRICT;
`;

const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * The runner's durable state in SQLite (runtime.md §5.7–§5.8, D7): the outbox every event is
 * committed to before it is sent, the cumulative ACK that trims it, and the command journal
 * that gives each command one effect however often it is delivered. Every change is one
 * transaction; the database is checked against its invariants whenever it is opened.
 */
export class RunnerState {
  private readonly sql: (text: string) => Database.Statement;
  /** The credential observer's bindings (runtime.md §13.1), in this database. */
  readonly credentials: CredentialStore;

  private constructor(
    private readonly db: Database.Database,
    readonly binding: StateBinding,
  ) {
    this.sql = statementCache(db);
    this.credentials = sqliteCredentialStore(db);
  }

  static open(dir: string, binding: StateBinding): RunnerState {
    if (!(binding.p0ReserveBytes > 0 && binding.p0ReserveBytes < binding.maxOutboxBytes)) {
      throw new StateError("state_bad_limits", dir, "the P0 reserve must be positive and smaller than the outbox");
    }
    const path = join(dir, STATE_FILE);
    const db = openPrivateDatabase(path, { maxFileBytes: binding.maxOutboxBytes + STATE_SLACK_BYTES });
    try {
      db.exec(SCHEMA_SQL + CREDENTIAL_OBSERVER_SQL);
      const state = new RunnerState(db, binding);
      db.transaction(() => state.initialise(path))();
      return state;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  private initialise(path: string): void {
    const marker = this.sql("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | undefined;
    const b = this.binding;
    if (!marker) {
      this.sql("INSERT INTO meta (key, value) VALUES ('schema', ?)").run(STATE_SCHEMA);
      this.sql("INSERT INTO binding VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)").run(
        b.runnerInstanceId,
        b.environmentLeaseId,
        b.runId,
        b.normalizedSessionId,
        b.turnId,
        b.itemId,
        b.maxOutboxBytes,
        b.p0ReserveBytes,
      );
      this.sql("INSERT INTO runner_state VALUES (1, 'connecting', 1, 0, 0, 0, 0, 0, 0, 0)").run();
      return;
    }
    if (marker.value !== STATE_SCHEMA)
      throw new StateError(
        "state_unknown_schema",
        path,
        `the state records schema ${marker.value}, not ${STATE_SCHEMA}`,
      );
    this.checkInvariants(path);
    // A command journaled but not finished before the restart may or may not have had its
    // effect: it becomes indeterminate and never runs again.
    this.sql("UPDATE processed_commands SET status = 'indeterminate' WHERE status = 'pending'").run();
  }

  private checkInvariants(path: string): void {
    const fail = (code: string, message: string): never => {
      throw new StateError(code, path, message);
    };
    const stored = this.sql("SELECT * FROM binding WHERE id = 1").get() as Record<string, unknown>;
    const b = this.binding;
    const expected: Record<string, unknown> = {
      runner_instance_id: b.runnerInstanceId,
      environment_lease_id: b.environmentLeaseId,
      run_id: b.runId,
      normalized_session_id: b.normalizedSessionId,
      turn_id: b.turnId,
      item_id: b.itemId,
      max_outbox_bytes: b.maxOutboxBytes,
      p0_reserve_bytes: b.p0ReserveBytes,
    };
    for (const [key, value] of Object.entries(expected)) {
      if (stored?.[key] !== value)
        fail(
          "state_binding_mismatch",
          `the state belongs to ${key}=${JSON.stringify(stored?.[key])}, not ${JSON.stringify(value)}`,
        );
    }
    const c = this.counters();
    const rows = this.sql("SELECT source_seq, envelope, byte_size FROM outbox ORDER BY source_seq").all() as Array<{
      source_seq: number;
      envelope: string;
      byte_size: number;
    }>;
    let bytes = 0;
    rows.forEach((row, i) => {
      if (row.source_seq !== c.ackedSourceSeq + 1 + i)
        fail("state_outbox_not_contiguous", `outbox row ${row.source_seq} is not ${c.ackedSourceSeq + 1 + i}`);
      if (Buffer.byteLength(row.envelope) !== row.byte_size)
        fail(
          "state_outbox_size",
          `outbox row ${row.source_seq} records ${row.byte_size} bytes for a ${Buffer.byteLength(row.envelope)}-byte envelope`,
        );
      let seq: unknown;
      try {
        seq = (JSON.parse(row.envelope) as { sourceSeq?: unknown }).sourceSeq;
      } catch {
        fail("state_outbox_envelope", `outbox row ${row.source_seq} is not JSON`);
      }
      if (seq !== row.source_seq)
        fail("state_outbox_envelope", `outbox row ${row.source_seq} holds an event with sourceSeq ${String(seq)}`);
      bytes += row.byte_size;
    });
    const highest = c.nextSourceSeq - 1;
    const terminal = this.terminalSourceSeq();
    if (terminal !== null && !(Number.isSafeInteger(terminal) && terminal >= 1 && terminal <= highest))
      fail(
        "state_terminal_invalid",
        `the recorded run.terminal sourceSeq ${terminal} is not an event produced (1..${highest})`,
      );
    if (rows.length === 0 ? c.ackedSourceSeq !== highest : rows.at(-1)!.source_seq !== highest) {
      fail("state_outbox_not_contiguous", `the outbox must run from ack+1 to ${highest} (ack ${c.ackedSourceSeq})`);
    }
    if (bytes !== c.outboxBytes)
      fail("state_outbox_size", `the outbox holds ${bytes} bytes, the counter says ${c.outboxBytes}`);
    for (const row of credentialRows(this.db)) {
      const problem = credentialRowProblem(row);
      if (problem) fail("state_credential_observer", problem);
    }
    const journal = this.sql("SELECT controller_seq, status, fingerprint FROM processed_commands").all() as Array<{
      controller_seq: number;
      status: string;
      fingerprint: string;
    }>;
    for (const j of journal) {
      if (j.controller_seq <= c.compactedThroughControllerSeq || j.controller_seq > c.lastControllerCommandSeq)
        fail(
          "state_journal_range",
          `journal seq ${j.controller_seq} is outside (${c.compactedThroughControllerSeq}, ${c.lastControllerCommandSeq}]`,
        );
      if (!["pending", "completed", "failed", "rejected", "indeterminate"].includes(j.status))
        fail("state_journal_status", `journal status ${j.status} is unknown`);
      if (!/^[a-f0-9]{64}$/.test(j.fingerprint))
        fail("state_journal_fingerprint", `journal seq ${j.controller_seq} has no valid fingerprint`);
    }
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

  /**
   * Commits one event to the outbox under the next sourceSeq, before anything is sent.
   * `build(sourceSeq)` returns the exact bytes that will go on the wire. A non-P0 event past
   * the soft limit (outbox − P0 reserve) is refused and turns backpressure on, to be offered
   * again once ACKs free room; a P0 event past the whole outbox leaves the state unrecoverable
   * (runtime.md §5.7). An event larger than its whole class limit can never fit: event_too_large.
   * `recovery` is what the event changes in the provider recovery record, committed with it;
   * `retain`, a capability or goal event's payload, replaces the last one of its kind kept for
   * a replacement process (runtime.md §9); `alsoCommit`, any other state the event settles (a
   * credential event no longer pending). All commit in the event's transaction.
   */
  admit(
    priority: Priority,
    eventType: string,
    build: (sourceSeq: number) => string,
    recovery: Partial<ProviderRecovery> | null = null,
    retain: Record<string, unknown> | null = null,
    alsoCommit?: () => void,
  ): Admission {
    return this.db.transaction((): Admission => {
      const c = this.counters();
      if (c.lifecycle === "unrecoverable")
        return { ok: false, code: "state_unrecoverable", message: "the state is unrecoverable; no event is admitted" };
      const envelope = build(c.nextSourceSeq);
      const size = Buffer.byteLength(envelope);
      if (size > MAX_FRAME_BYTES)
        return {
          ok: false,
          code: "frame_too_large",
          message: `a ${size}-byte ${eventType} event is over the ${MAX_FRAME_BYTES}-byte frame limit`,
        };
      const limit =
        priority === 0 ? this.binding.maxOutboxBytes : this.binding.maxOutboxBytes - this.binding.p0ReserveBytes;
      if (size > limit)
        return {
          ok: false,
          code: "event_too_large",
          message: `a ${size}-byte P${priority} ${eventType} can never fit: the outbox takes ${limit} bytes of P${priority} events`,
        };
      const total = c.outboxBytes + size;
      if (priority !== 0 && total > this.binding.maxOutboxBytes - this.binding.p0ReserveBytes) {
        this.sql(
          "UPDATE runner_state SET backpressure = 1, lifecycle = CASE WHEN lifecycle = 'ready' THEN 'backpressure' ELSE lifecycle END WHERE id = 1",
        ).run();
        this.noteDiagnostic(
          "backpressure",
          `refused a ${size}-byte P${priority} ${eventType}: the outbox holds ${c.outboxBytes} of ${this.binding.maxOutboxBytes - this.binding.p0ReserveBytes} bytes before the P0 reserve`,
        );
        return {
          ok: false,
          code: "backpressure",
          message: `the outbox is over its soft limit; ${eventType} was refused, not dropped`,
        };
      }
      if (total > this.binding.maxOutboxBytes) {
        this.sql("UPDATE runner_state SET lifecycle = 'unrecoverable' WHERE id = 1").run();
        this.noteDiagnostic(
          "p0_storage_exhausted",
          `a P0 ${eventType} of ${size} bytes does not fit the ${this.binding.maxOutboxBytes}-byte outbox`,
        );
        return {
          ok: false,
          code: "p0_storage_exhausted",
          message: "a P0 event does not fit the outbox: the state is unrecoverable",
        };
      }
      this.sql("INSERT INTO outbox (source_seq, priority, event_type, envelope, byte_size) VALUES (?, ?, ?, ?, ?)").run(
        c.nextSourceSeq,
        priority,
        eventType,
        envelope,
        size,
      );
      // The run's terminal is remembered apart from the outbox, which forgets it once acknowledged.
      if (eventType === "run.terminal")
        this.sql("INSERT OR IGNORE INTO meta (key, value) VALUES ('terminal_source_seq', ?)").run(
          String(c.nextSourceSeq),
        );
      if (recovery) this.writeRecovery({ ...this.recovery(), ...recovery });
      if (retain)
        this.sql("INSERT OR REPLACE INTO v2_replay_events (slot, event_type, payload) VALUES (?, ?, ?)").run(
          eventType === "session.capabilities.updated" ? "capability" : "goal",
          eventType,
          JSON.stringify(retain),
        );
      alsoCommit?.();
      this.sql(
        "UPDATE runner_state SET next_source_seq = next_source_seq + 1, outbox_bytes = ?, peak_outbox_bytes = MAX(peak_outbox_bytes, ?) WHERE id = 1",
      ).run(total, total);
      return { ok: true, sourceSeq: c.nextSourceSeq, envelope };
    })();
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

  /** The provider recovery record (runtime.md §8.3): what a restarted runner resumes its harness's session from. */
  recovery(): ProviderRecovery {
    const r = this.sql("SELECT * FROM provider_recovery WHERE id = 1").get() as
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

  private writeRecovery(r: ProviderRecovery): void {
    this.sql(
      "INSERT OR REPLACE INTO provider_recovery (id, driver_session_id, load_session, turn_id, turn_ended) VALUES (1, ?, ?, ?, ?)",
    ).run(r.driverSessionId, r.loadSession === null ? null : Number(r.loadSession), r.turnId, Number(r.turnEnded));
  }

  /** The last capability event, then the last goal event, as committed: what a replacement process sends again. */
  retainedGoalEvents(): Array<{ eventType: string; payload: Record<string, unknown> }> {
    const rows = this.sql("SELECT event_type, payload FROM v2_replay_events ORDER BY slot").all() as Array<{
      event_type: string;
      payload: string;
    }>;
    return rows.map((r) => ({ eventType: r.event_type, payload: JSON.parse(r.payload) as Record<string, unknown> }));
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

  /** Up to `limit` unacknowledged events after `sourceSeq`, in order, as their committed bytes. */
  pendingAfter(sourceSeq: number, limit: number): Array<{ sourceSeq: number; envelope: string }> {
    return (
      this.sql("SELECT source_seq, envelope FROM outbox WHERE source_seq > ? ORDER BY source_seq LIMIT ?").all(
        sourceSeq,
        limit,
      ) as Array<{ source_seq: number; envelope: string }>
    ).map((r) => ({ sourceSeq: r.source_seq, envelope: r.envelope }));
  }

  /** Every unacknowledged event, in order, as the exact bytes first committed (for resend). */
  pending(): Array<{ sourceSeq: number; envelope: string }> {
    return (
      this.sql("SELECT source_seq, envelope FROM outbox ORDER BY source_seq").all() as Array<{
        source_seq: number;
        envelope: string;
      }>
    ).map((r) => ({ sourceSeq: r.source_seq, envelope: r.envelope }));
  }

  /**
   * Applies a cumulative ACK: every event ≤ n is committed at the authority. Refused when it
   * goes backward or past the highest event produced. Trims the outbox and clears
   * backpressure once three quarters of the soft limit or less are held, in one transaction.
   */
  applyAck(
    n: number,
  ): { ok: true; trimmed: number } | { ok: false; code: "ack_backward" | "ack_beyond_produced"; message: string } {
    return this.db.transaction(() => {
      const c = this.counters();
      if (!Number.isSafeInteger(n) || n < c.ackedSourceSeq)
        return {
          ok: false as const,
          code: "ack_backward" as const,
          message: `ack ${n} is behind the acknowledged ${c.ackedSourceSeq}`,
        };
      if (n > c.nextSourceSeq - 1)
        return {
          ok: false as const,
          code: "ack_beyond_produced" as const,
          message: `ack ${n} is past the highest event produced, ${c.nextSourceSeq - 1}`,
        };
      const freed = this.sql(
        "SELECT COALESCE(SUM(byte_size), 0) AS b, COUNT(*) AS n FROM outbox WHERE source_seq <= ?",
      ).get(n) as { b: number; n: number };
      this.sql("DELETE FROM outbox WHERE source_seq <= ?").run(n);
      const remaining = c.outboxBytes - freed.b;
      // Hysteresis: clearing right under the soft limit would let one event in and refuse the
      // next, an episode per event; a quarter of the soft limit must be free first.
      const clear = remaining <= ((this.binding.maxOutboxBytes - this.binding.p0ReserveBytes) * 3) / 4;
      this.sql(
        `UPDATE runner_state SET acked_source_seq = ?, outbox_bytes = ?${clear ? ", backpressure = 0, lifecycle = CASE WHEN lifecycle = 'backpressure' THEN 'ready' ELSE lifecycle END" : ""} WHERE id = 1`,
      ).run(n, remaining);
      return { ok: true as const, trimmed: freed.n };
    })();
  }

  /**
   * Journals a command before its effect. The same id and fingerprint replays the stored
   * outcome; a different fingerprint, a compacted or out-of-order sequence is refused. Only
   * `execute` means: run it now, then call finishCommand.
   */
  beginCommand(command: JournalCommand): CommandDecision {
    const invalid = validateCommand(command);
    if (invalid) return { kind: "rejected", code: "invalid_command", message: invalid };
    const fingerprint = sha256Hex(canonicalJson(command));
    return this.db.transaction((): CommandDecision => {
      const known = this.sql("SELECT status, result, fingerprint FROM processed_commands WHERE command_id = ?").get(
        command.commandId,
      ) as { status: CommandStatus; result: string | null; fingerprint: string } | undefined;
      if (known) {
        if (known.fingerprint !== fingerprint)
          return {
            kind: "rejected",
            code: "command_fingerprint_mismatch",
            message: `commandId ${command.commandId} was journaled with different content`,
          };
        return {
          kind: "replay",
          status: known.status,
          result: known.result === null ? null : JSON.parse(known.result),
        };
      }
      const c = this.counters();
      if (command.controllerSeq <= c.compactedThroughControllerSeq)
        return {
          kind: "rejected",
          code: "command_history_compacted",
          message: `controllerSeq ${command.controllerSeq} is at or before the compacted history (${c.compactedThroughControllerSeq})`,
        };
      if (command.controllerSeq !== c.lastControllerCommandSeq + 1)
        return {
          kind: "rejected",
          code: "controller_seq_out_of_order",
          message: `controllerSeq ${command.controllerSeq} is not the next one (${c.lastControllerCommandSeq + 1})`,
        };
      this.sql("INSERT INTO processed_commands VALUES (?, ?, ?, 'pending', NULL, ?)").run(
        command.commandId,
        command.controllerSeq,
        command.type,
        fingerprint,
      );
      this.sql("UPDATE runner_state SET last_controller_command_seq = ? WHERE id = 1").run(command.controllerSeq);
      return { kind: "execute" };
    })();
  }

  /** Records a command's outcome (committed before its result is sent) and compacts the journal to the newest 128. */
  finishCommand(commandId: string, status: "completed" | "failed" | "rejected", result: unknown): void {
    let text = JSON.stringify(result ?? null);
    if (Buffer.byteLength(text) > MAX_RESULT_BYTES)
      text = JSON.stringify({ truncated: true, reason: `the result was over ${MAX_RESULT_BYTES} bytes` });
    this.db.transaction(() => {
      const changed = this.sql(
        "UPDATE processed_commands SET status = ?, result = ? WHERE command_id = ? AND status = 'pending'",
      ).run(status, text, commandId).changes;
      if (changed !== 1)
        throw new StateError("journal_not_pending", commandId, "only a pending command can be finished");
      const cut = this.sql(
        "SELECT controller_seq FROM processed_commands ORDER BY controller_seq DESC LIMIT 1 OFFSET ?",
      ).get(JOURNAL_KEEP) as { controller_seq: number } | undefined;
      if (cut) {
        this.sql("DELETE FROM processed_commands WHERE controller_seq <= ?").run(cut.controller_seq);
        this.sql("UPDATE runner_state SET compacted_through_controller_seq = ? WHERE id = 1").run(cut.controller_seq);
      }
    })();
  }

  /** Whether a command of this type was ever journaled (its effect may have happened). */
  journaled(type: string): boolean {
    return (
      this.sql("SELECT 1 FROM processed_commands WHERE command_type = ? LIMIT 1").get(type) !== undefined ||
      this.counters().compactedThroughControllerSeq > 0
    );
  }

  setLifecycle(lifecycle: Lifecycle): void {
    this.sql("UPDATE runner_state SET lifecycle = ? WHERE id = 1").run(lifecycle);
  }

  /** Keeps the newest 32 diagnostics; older ones go. */
  private noteDiagnostic(code: string, message: string): void {
    this.sql("INSERT INTO diagnostics (code, message) VALUES (?, ?)").run(code, cutText(message, 1024));
    this.sql("DELETE FROM diagnostics WHERE id <= (SELECT MAX(id) FROM diagnostics) - ?").run(MAX_DIAGNOSTICS);
  }

  diagnostics(): Array<{ code: string; message: string }> {
    return this.sql("SELECT code, message FROM diagnostics ORDER BY id").all() as Array<{
      code: string;
      message: string;
    }>;
  }

  close(): void {
    this.db.close();
  }
}

/** The command-boundary limits of runtime.md §5.8 step 1; a reason, or null when the command is acceptable. */
function validateCommand(c: JournalCommand): string | null {
  if (
    typeof c.commandId !== "string" ||
    c.commandId.length < 1 ||
    c.commandId.length > 160 ||
    CONTROL.test(c.commandId)
  )
    return "commandId must be 1-160 characters without control characters";
  if (typeof c.issuedAt !== "string" || c.issuedAt.length > 64)
    return "issuedAt must be a string of at most 64 characters";
  if (c.deadlineAt !== undefined && (typeof c.deadlineAt !== "string" || c.deadlineAt.length > 64))
    return "deadlineAt must be a string of at most 64 characters";
  if (!Number.isSafeInteger(c.controllerSeq) || c.controllerSeq < 1)
    return "controllerSeq must be an integer of at least 1";
  if (!isPlainObject(c.payload)) return "payload must be an object";
  if (c.precondition !== undefined && !isPlainObject(c.precondition)) return "precondition must be an object";
  return null;
}
