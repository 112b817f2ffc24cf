import { StateError } from "../../../storage/private-sqlite.js";
import { credentialRowProblem, credentialRows } from "../../credentials/sqlite-credential-store.js";
import type { StateHandle } from "./handle.js";

const STATE_SCHEMA = "paperclip.runner.durable.state.v1";

export const SCHEMA_SQL = `
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

/**
 * Writes a new state's schema marker, binding and counters, or checks an existing state
 * against its binding and invariants. Runs in the opening transaction.
 */
export function initialiseState(h: StateHandle, path: string): void {
  const marker = h.sql("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | undefined;
  const b = h.binding;
  if (!marker) {
    h.sql("INSERT INTO meta (key, value) VALUES ('schema', ?)").run(STATE_SCHEMA);
    h.sql("INSERT INTO binding VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)").run(
      b.runnerInstanceId,
      b.environmentLeaseId,
      b.runId,
      b.normalizedSessionId,
      b.turnId,
      b.itemId,
      b.maxOutboxBytes,
      b.p0ReserveBytes,
    );
    h.sql("INSERT INTO runner_state VALUES (1, 'connecting', 1, 0, 0, 0, 0, 0, 0, 0)").run();
    return;
  }
  if (marker.value !== STATE_SCHEMA)
    throw new StateError("state_unknown_schema", path, `the state records schema ${marker.value}, not ${STATE_SCHEMA}`);
  checkInvariants(h, path);
  // A command journaled but not finished before the restart may or may not have had its
  // effect: it becomes indeterminate and never runs again.
  h.sql("UPDATE processed_commands SET status = 'indeterminate' WHERE status = 'pending'").run();
}

function checkInvariants(h: StateHandle, path: string): void {
  const fail = (code: string, message: string): never => {
    throw new StateError(code, path, message);
  };
  const stored = h.sql("SELECT * FROM binding WHERE id = 1").get() as Record<string, unknown>;
  const b = h.binding;
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
  const c = h.counters();
  const rows = h.sql("SELECT source_seq, envelope, byte_size FROM outbox ORDER BY source_seq").all() as Array<{
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
  const terminal = h.terminalSourceSeq();
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
  for (const row of credentialRows(h.db)) {
    const problem = credentialRowProblem(row);
    if (problem) fail("state_credential_observer", problem);
  }
  const journal = h.sql("SELECT controller_seq, status, fingerprint FROM processed_commands").all() as Array<{
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
