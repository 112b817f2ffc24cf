import { canonicalJson } from "../../../contract/canonical-json.js";
import { sha256Hex } from "../../../contract/digest.js";
import { isPlainObject } from "../../../contract/plain-object.js";
import { StateError } from "../../../storage/private-sqlite.js";
import type { StateHandle } from "./handle.js";

export type CommandStatus = "pending" | "completed" | "failed" | "rejected" | "indeterminate";

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

const JOURNAL_KEEP = 128;
const MAX_RESULT_BYTES = 64 * 1024;

const CONTROL = /[\u0000-\u001f\u007f]/;

/** The command journal (runtime.md §5.8): each command one effect, however often it is delivered. */
export class CommandJournal {
  constructor(private readonly h: StateHandle) {}

  /**
   * Journals a command before its effect. The same id and fingerprint replays the stored
   * outcome; a different fingerprint, a compacted or out-of-order sequence is refused. Only
   * `execute` means: run it now, then call finishCommand.
   */
  beginCommand(command: JournalCommand): CommandDecision {
    const invalid = validateCommand(command);
    if (invalid) return { kind: "rejected", code: "invalid_command", message: invalid };
    const fingerprint = sha256Hex(canonicalJson(command));
    return this.h.db.transaction((): CommandDecision => {
      const known = this.h
        .sql("SELECT status, result, fingerprint FROM processed_commands WHERE command_id = ?")
        .get(command.commandId) as { status: CommandStatus; result: string | null; fingerprint: string } | undefined;
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
      const c = this.h.counters();
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
      this.h
        .sql("INSERT INTO processed_commands VALUES (?, ?, ?, 'pending', NULL, ?)")
        .run(command.commandId, command.controllerSeq, command.type, fingerprint);
      this.h.sql("UPDATE runner_state SET last_controller_command_seq = ? WHERE id = 1").run(command.controllerSeq);
      return { kind: "execute" };
    })();
  }

  /** Records a command's outcome (committed before its result is sent) and compacts the journal to the newest 128. */
  finishCommand(commandId: string, status: "completed" | "failed" | "rejected", result: unknown): void {
    let text = JSON.stringify(result ?? null);
    if (Buffer.byteLength(text) > MAX_RESULT_BYTES)
      text = JSON.stringify({ truncated: true, reason: `the result was over ${MAX_RESULT_BYTES} bytes` });
    this.h.db.transaction(() => {
      const changed = this.h
        .sql("UPDATE processed_commands SET status = ?, result = ? WHERE command_id = ? AND status = 'pending'")
        .run(status, text, commandId).changes;
      if (changed !== 1)
        throw new StateError("journal_not_pending", commandId, "only a pending command can be finished");
      const cut = this.h
        .sql("SELECT controller_seq FROM processed_commands ORDER BY controller_seq DESC LIMIT 1 OFFSET ?")
        .get(JOURNAL_KEEP) as { controller_seq: number } | undefined;
      if (cut) {
        this.h.sql("DELETE FROM processed_commands WHERE controller_seq <= ?").run(cut.controller_seq);
        this.h.sql("UPDATE runner_state SET compacted_through_controller_seq = ? WHERE id = 1").run(cut.controller_seq);
      }
    })();
  }

  /** Whether a command of this type was ever journaled (its effect may have happened). */
  journaled(type: string): boolean {
    return (
      this.h.sql("SELECT 1 FROM processed_commands WHERE command_type = ? LIMIT 1").get(type) !== undefined ||
      this.h.counters().compactedThroughControllerSeq > 0
    );
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
