import { canonicalJson } from "../contract/canonical-json.js";
import { admit } from "../contract/admission.js";
import { sha256Hex } from "../contract/digest.js";
import type { PrpCommand } from "../contract/kinds.js";
import { isPlainObject } from "../contract/plain-object.js";
import { commandSince } from "../contract/version-gates.js";
import { fail, ok, type Refusal, type Result } from "./errors.js";
import { MAX_COMMAND_BYTES, RESULT_STATUSES, type ResultStatus } from "./limits.js";
import { recordRefusal } from "./refusal.js";
import { PerRunSerial } from "./serial.js";
import type { AuthorityStore, CommandRow, NewCommand } from "./store.js";

export interface CommandQueueOptions {
  store: AuthorityStore;
  now?: () => number;
}

export interface QueuedCommand {
  commandId: string;
  controllerSeq: number;
  type: string;
  command: PrpCommand;
  /** False when an identical command was already queued under this id (idempotent re-queue). */
  created: boolean;
}

export interface CommandDelivery {
  /** The envelope exactly as queued: every delivery of one command is byte-identical. */
  command: PrpCommand;
  deliveryCount: number;
}

export interface AcceptedResult {
  commandId: string;
  status: ResultStatus;
  /** A repeat of the stored result (counted in duplicateCommandResults). */
  duplicate: boolean;
  /** `runner.suspend` and `runner.shutdown` results get a `command_result_ack` (§5.5). */
  needsResultAck: boolean;
}

const CONTROL = /[\u0000-\u001f\u007f]/;
const RESULT_ACKED = new Set(["runner.suspend", "runner.shutdown"]);

/** The default command id: `command_prp_<controllerSeq padded to 8>` (§5.8). */
export const defaultCommandId = (controllerSeq: number): string =>
  `command_prp_${String(controllerSeq).padStart(8, "0")}`;

/** The id of the `semantic_tool.result` answering one call: one per (run, call), so it is idempotent (§6.5). */
export const semanticToolResultCommandId = (runId: string, callId: string): string =>
  `command_tool_${sha256Hex(`${runId}\0${callId}`).slice(0, 32)}`;

/**
 * The durable command queue of runtime.md §5.8, independent of the socket. Commands are
 * queued with contiguous controllerSeqs (position + 1), at most 500 per run, each envelope at
 * most 1 MiB − 4 KiB. Only the lowest command without a result is ever delivered; its result
 * is persisted before the next one is released. Each refusal of a runner's result means close.
 */
export class CommandQueue {
  private readonly store: AuthorityStore;
  private readonly now: () => number;
  private readonly serial = new PerRunSerial();

  constructor(options: CommandQueueOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
  }

  /**
   * Queues a command, or finds it again. A new one gets the next controllerSeq and a
   * `paperclip.prp.command.vN` envelope for the run's protocol version (the version of its
   * lease, so that the runner's codec accepts it), checked by the codec and frozen: the runner
   * fingerprints the whole command, so every delivery must be the same bytes. An existing id
   * must come with the same type and canonical payload, and then returns the stored command.
   */
  queueCommand(runId: string, type: string, payload: unknown, id?: string): Promise<Result<QueuedCommand>> {
    return this.serial.run(runId, () => this.queueNow(runId, type, payload, id));
  }

  private async queueNow(
    runId: string,
    type: string,
    payload: unknown,
    id: string | undefined,
  ): Promise<Result<QueuedCommand>> {
    const checked = checkCommandInput(type, payload, id);
    if (!checked.ok) return checked;
    const canonicalPayload = checked.value;
    if (id !== undefined) {
      const existing = await this.store.command(runId, id);
      if (existing) return sameCommand(existing, type, canonicalPayload);
    }
    // Normally one pass; a second only if another instance appended in between.
    for (let attempt = 0; attempt < 3; attempt++) {
      const run = await this.store.run(runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${runId}`);
      if (run.terminalSourceSeq !== null)
        return fail(
          "run_ended",
          "/runId",
          `run ${runId} has ended (its run.terminal is committed): it takes no more commands`,
        );
      // A dispatch that ended (cancelled while queued, its worker lost too often) has no runner to come.
      const [dispatch] = await this.store.dispatch([runId]);
      if (dispatch?.state === "ended")
        return fail(
          "run_ended",
          "/runId",
          `run ${runId} has ended (${dispatch.endReason ?? "ended"}): no runner will take a command`,
        );
      const controllerSeq = run.commandCount + 1;
      const built = buildCommand(
        { runId, protocolVersion: run.protocolVersion },
        { controllerSeq, commandId: id ?? defaultCommandId(controllerSeq), type, payload, nowMs: this.now() },
      );
      if (!built.ok) return built;
      const appended = await this.store.appendCommand(runId, built.value, this.now());
      if (appended.ok) return ok(queued(appended.value, true));
      if (appended.error.code === "controller_seq_moved") continue;
      if (appended.error.code === "command_conflict") {
        // The id appeared meanwhile (another instance), or a caller-chosen id took the default one.
        const existing = await this.store.command(runId, built.value.commandId);
        if (existing && id !== undefined) return sameCommand(existing, type, canonicalPayload);
      }
      return appended;
    }
    return fail("controller_seq_moved", "/controllerSeq", "the queue kept moving under concurrent writers");
  }

  /**
   * The lowest command without a result, for the welcome's `pendingCommands` or right after a
   * result; its delivery is counted. Null when nothing is pending, or when the lowest was
   * already sent on this connection and awaits its result (pass `repeat` to send it again).
   */
  async nextCommandToDeliver(
    runId: string,
    connectionId: string,
    options: { repeat?: boolean } = {},
  ): Promise<Result<CommandDelivery | null>> {
    const delivered = await this.store.deliverNextCommand(runId, connectionId, options.repeat === true, this.now());
    if (!delivered.ok) return delivered;
    const row = delivered.value;
    return ok(
      row === null ? null : { command: JSON.parse(row.envelope) as PrpCommand, deliveryCount: row.deliveryCount },
    );
  }

  /**
   * A runner's `command_result` payload: `{commandId, status, result, …}`. The status must be
   * completed, failed, rejected or indeterminate (each terminal: `indeterminate` is what a
   * restarted runner reports for a command it may have run, and refusing it loops forever,
   * PR #12646). `controllerSeq` and `type`, when present, must be the command's. The result is
   * persisted before this returns, so the next command is released only after it. A repeat must
   * be canonically equal to the stored `{commandId, status, result}`.
   */
  async acceptCommandResult(runId: string, connectionId: string, value: unknown): Promise<Result<AcceptedResult>> {
    const parsed = parseResult(value);
    if (!parsed.ok) return this.refuse(runId, parsed);
    const { commandId, status, canonical } = parsed.value;
    const known = await this.store.command(runId, commandId);
    if (known) {
      const r = value as Record<string, unknown>;
      if (r.controllerSeq !== undefined && r.controllerSeq !== known.controllerSeq)
        return this.refuse(
          runId,
          fail("command_result_mismatch", "/controllerSeq", `${commandId} has controllerSeq ${known.controllerSeq}`),
        );
      if (r.type !== undefined && r.type !== known.type)
        return this.refuse(runId, fail("command_result_mismatch", "/type", `${commandId} is a ${known.type} command`));
    }
    const recorded = await this.store.recordCommandResult(
      runId,
      connectionId,
      { commandId, status, result: canonical },
      this.now(),
    );
    if (!recorded.ok) return this.refuse(runId, recorded);
    return ok({
      commandId,
      status,
      duplicate: recorded.value.duplicate,
      needsResultAck: RESULT_ACKED.has(recorded.value.command.type),
    });
  }

  async commands(runId: string): Promise<CommandRow[]> {
    return this.store.commands(runId);
  }

  private refuse<T>(runId: string, refusal: Refusal): Promise<Result<T>> {
    return recordRefusal(this.store, runId, refusal, this.now());
  }
}

/** A command's type, payload and id as given: the payload's canonical JSON, or why not. */
function checkCommandInput(type: unknown, payload: unknown, id: string | undefined): Result<string> {
  if (typeof type !== "string" || type === "")
    return fail("invalid_command", "/type", "the command type must be a non-empty string");
  if (!isPlainObject(payload)) return fail("invalid_command", "/payload", "the payload must be a JSON object");
  if (id !== undefined && (typeof id !== "string" || id.length < 1 || id.length > 160 || CONTROL.test(id))) {
    return fail("invalid_command", "/commandId", "a command id must be 1–160 characters without control characters");
  }
  try {
    return ok(canonicalJson(payload));
  } catch (err) {
    return fail("invalid_command", "/payload", `the payload is not canonical JSON data: ${(err as Error).message}`);
  }
}

export interface CommandToBuild {
  controllerSeq: number;
  commandId: string;
  type: string;
  payload: unknown;
  nowMs: number;
}

/**
 * One command's stored row: a `paperclip.prp.command.vN` envelope for the run's protocol
 * version, checked by the codec the runner admits commands with, and frozen as canonical JSON
 * (the runner fingerprints the whole command, so every delivery must be the same bytes). The
 * queue builds each command with it, and a run created from a spec its opening commands.
 */
export function buildCommand(run: { runId: string; protocolVersion: number }, c: CommandToBuild): Result<NewCommand> {
  const checked = checkCommandInput(c.type, c.payload, c.commandId);
  if (!checked.ok) return checked;
  // A v1 run never gets a v2 command (wire.md D2): said by name, not as a schema failure.
  const needs = commandSince(c.type);
  if (needs > run.protocolVersion)
    return fail(
      "command_needs_newer_version",
      "/type",
      `${c.type} needs protocol version ${needs} or later; run ${run.runId} is on version ${run.protocolVersion}`,
    );
  const envelope = {
    schema: `paperclip.prp.command.v${run.protocolVersion}`,
    commandId: c.commandId,
    controllerSeq: c.controllerSeq,
    type: c.type,
    issuedAt: new Date(c.nowMs).toISOString(),
    payload: c.payload,
  };
  const admitted = admit("command", envelope);
  if (!admitted.ok)
    return fail("invalid_command", admitted.error.path, `${admitted.error.code}: ${admitted.error.message}`);
  const bytes = Buffer.byteLength(admitted.canonical);
  if (bytes > MAX_COMMAND_BYTES)
    return fail("command_too_large", "", `the command is ${bytes} bytes; the limit is ${MAX_COMMAND_BYTES}`);
  return ok({
    commandId: c.commandId,
    controllerSeq: c.controllerSeq,
    type: c.type,
    payload: checked.value,
    envelope: admitted.canonical,
  });
}

function queued(row: CommandRow, created: boolean): QueuedCommand {
  return {
    commandId: row.commandId,
    controllerSeq: row.controllerSeq,
    type: row.type,
    command: JSON.parse(row.envelope) as PrpCommand,
    created,
  };
}

function sameCommand(existing: CommandRow, type: string, canonicalPayload: string): Result<QueuedCommand> {
  if (existing.type !== type || existing.payload !== canonicalPayload) {
    return fail(
      "command_conflict",
      "/commandId",
      `${existing.commandId} is already queued with another type or payload`,
    );
  }
  return ok(queued(existing, false));
}

function parseResult(value: unknown): Result<{ commandId: string; status: ResultStatus; canonical: string }> {
  if (!isPlainObject(value)) return fail("invalid_command_result", "", "a command result must be a JSON object");
  const { commandId, status } = value;
  if (typeof commandId !== "string" || commandId === "")
    return fail("invalid_command_result", "/commandId", "commandId must be a non-empty string");
  if (!(RESULT_STATUSES as readonly unknown[]).includes(status))
    return fail("invalid_command_result", "/status", `status must be one of ${RESULT_STATUSES.join(", ")}`);
  try {
    return ok({
      commandId,
      status: status as ResultStatus,
      canonical: canonicalJson({ commandId, status, result: value.result ?? null }),
    });
  } catch (err) {
    return fail(
      "invalid_command_result",
      "/result",
      `the result is not canonical JSON data: ${(err as Error).message}`,
    );
  }
}
