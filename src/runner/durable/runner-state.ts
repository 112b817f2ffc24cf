import { join } from "node:path";
import type { Priority } from "../../contract/priority.js";
import { openPrivateDatabase, StateError } from "../../storage/private-sqlite.js";
import type { CredentialStore } from "../credentials/credential-store.js";
import { CREDENTIAL_OBSERVER_SQL, sqliteCredentialStore } from "../credentials/sqlite-credential-store.js";
import type { ProviderRecovery } from "./provider-recovery.js";
import { StateHandle, type Lifecycle, type StateBinding, type StateCounters } from "./state/handle.js";
import { CommandJournal, type CommandDecision, type JournalCommand } from "./state/journal.js";
import { initialiseState, SCHEMA_SQL } from "./state/open-checks.js";
import { StateOutbox, type Admission } from "./state/outbox.js";
import { StateRecovery } from "./state/recovery.js";

export type { StateBinding } from "./state/handle.js";
export type { JournalCommand } from "./state/journal.js";
export type { Admission } from "./state/outbox.js";
export { DEFAULT_MAX_OUTBOX_BYTES, DEFAULT_P0_RESERVE_BYTES } from "./state/outbox.js";

export const STATE_FILE = "runner-state.sqlite";
const STATE_SLACK_BYTES = 16 * 1024 * 1024;

/**
 * The runner's durable state in SQLite (runtime.md §5.7–§5.8, D7): the outbox every event is
 * committed to before it is sent, the cumulative ACK that trims it, and the command journal
 * that gives each command one effect however often it is delivered. Every change is one
 * transaction; the database is checked against its invariants whenever it is opened. This
 * class only composes the parts under `state/`, one per aggregate, over one shared handle.
 */
export class RunnerState {
  /** The credential observer's bindings (runtime.md §13.1), in this database. */
  readonly credentials: CredentialStore;
  readonly binding: StateBinding;
  private readonly outbox: StateOutbox;
  private readonly journal: CommandJournal;
  private readonly provider: StateRecovery;

  private constructor(private readonly h: StateHandle) {
    this.credentials = sqliteCredentialStore(h.db);
    this.binding = h.binding;
    this.provider = new StateRecovery(h);
    this.outbox = new StateOutbox(h, this.provider);
    this.journal = new CommandJournal(h);
  }

  static open(dir: string, binding: StateBinding): RunnerState {
    if (!(binding.p0ReserveBytes > 0 && binding.p0ReserveBytes < binding.maxOutboxBytes)) {
      throw new StateError("state_bad_limits", dir, "the P0 reserve must be positive and smaller than the outbox");
    }
    const path = join(dir, STATE_FILE);
    const db = openPrivateDatabase(path, { maxFileBytes: binding.maxOutboxBytes + STATE_SLACK_BYTES });
    try {
      db.exec(SCHEMA_SQL + CREDENTIAL_OBSERVER_SQL);
      const h = new StateHandle(db, binding);
      db.transaction(() => initialiseState(h, path))();
      return new RunnerState(h);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  counters(): StateCounters {
    return this.h.counters();
  }

  /** See StateOutbox.admit. */
  admit(
    priority: Priority,
    eventType: string,
    build: (sourceSeq: number) => string,
    recovery: Partial<ProviderRecovery> | null = null,
    retain: Record<string, unknown> | null = null,
    alsoCommit?: () => void,
  ): Admission {
    return this.outbox.admit(priority, eventType, build, recovery, retain, alsoCommit);
  }

  terminalSourceSeq(): number | null {
    return this.h.terminalSourceSeq();
  }

  recovery(): ProviderRecovery {
    return this.provider.recovery();
  }

  retainedGoalEvents(): Array<{ eventType: string; payload: Record<string, unknown> }> {
    return this.provider.retainedGoalEvents();
  }

  negotiatedVersion(): number | null {
    return this.h.negotiatedVersion();
  }

  setNegotiatedVersion(version: number): void {
    this.h.setNegotiatedVersion(version);
  }

  pendingAfter(sourceSeq: number, limit: number): Array<{ sourceSeq: number; envelope: string }> {
    return this.outbox.pendingAfter(sourceSeq, limit);
  }

  pending(): Array<{ sourceSeq: number; envelope: string }> {
    return this.outbox.pending();
  }

  applyAck(n: number): ReturnType<StateOutbox["applyAck"]> {
    return this.outbox.applyAck(n);
  }

  beginCommand(command: JournalCommand): CommandDecision {
    return this.journal.beginCommand(command);
  }

  finishCommand(commandId: string, status: "completed" | "failed" | "rejected", result: unknown): void {
    this.journal.finishCommand(commandId, status, result);
  }

  journaled(type: string): boolean {
    return this.journal.journaled(type);
  }

  setLifecycle(lifecycle: Lifecycle): void {
    this.h.setLifecycle(lifecycle);
  }

  diagnostics(): Array<{ code: string; message: string }> {
    return this.h.diagnostics();
  }

  close(): void {
    this.h.db.close();
  }
}
