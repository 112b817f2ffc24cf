import { fail, ok, terminalCommitted, type Refusal, type Result } from "./errors.js";
import { MAX_COMMANDS } from "./limits.js";
import { sameCredential, type Row } from "./store-rows.js";
import type {
  BatchedEvent,
  CommandRow,
  CredentialRow,
  LeaseRenewal,
  NewCommand,
  NewCommandResult,
  NewCommittedEvent,
  ReauthorizeRequest,
  RenewalLease,
  RenewLeaseRequest,
  RunSpecRow,
} from "./store.js";

/**
 * The decisions every store makes inside its transaction, on rows it has just read (and, in
 * PostgreSQL, locked): pure, so SQLite and PostgreSQL refuse the same things with the same codes.
 */

/** The run row, if `connectionId` is its one current connection. */
export function currentConnection(run: Row | undefined, runId: string, connectionId: string): Result<Row> {
  if (!run) return fail("unknown_run", "/runId", `no run ${runId}`);
  if (run.current_connection_id !== connectionId)
    return fail(
      "connection_superseded",
      "/connectionId",
      `${connectionId} is not the current connection of run ${runId}`,
    );
  return ok(run);
}

/** §5.6 step 4 at commit time: strictly the next sourceSeq, and nothing after a committed terminal. */
export function appendRefusal(sourceSeq: number, acked: number, terminal: number | null): Refusal | null {
  if (terminal !== null && sourceSeq > terminal) return { ok: false, error: terminalCommitted(sourceSeq, terminal) };
  if (sourceSeq <= acked)
    return fail("sequence_stale", "/sourceSeq", `sourceSeq ${sourceSeq} is at or before the committed ${acked}`);
  if (sourceSeq !== acked + 1)
    return fail("sequence_gap", "/sourceSeq", `sourceSeq ${sourceSeq} is not the next one (${acked + 1})`);
  return null;
}

/** A run as a group commit's earlier items left it: its (locked) row, and its committed terminal's sourceSeq. */
export interface BatchRun {
  row: Row | undefined;
  terminal: number | null;
}

/** `commitEvent`'s checks of one batched event on its run as the batch left it: the refusal, or null. */
export function batchedAppendRefusal(
  run: BatchRun | undefined,
  { runId, connectionId, event }: BatchedEvent,
): Refusal | null {
  const current = currentConnection(run?.row, runId, connectionId);
  if (!current.ok) return current;
  return appendRefusal(event.sourceSeq, current.value.acked_source_seq as number, run!.terminal);
}

/** The run once `event` is appended: its cursor moved, and its terminal if the event is one. */
export function appended(run: BatchRun, event: NewCommittedEvent): BatchRun {
  return {
    row: { ...run.row, acked_source_seq: event.sourceSeq },
    terminal: event.eventType === "run.terminal" ? event.sourceSeq : run.terminal,
  };
}

/** The host's onCommittedEvent threw: its event is rolled back and not acknowledged. */
export function callbackFailed(sourceEventId: string, err: unknown): Refusal {
  return fail(
    "callback_failed",
    "",
    `the host's commit (onCommittedEvent) failed for ${sourceEventId}: ${(err as Error)?.message ?? String(err)}`,
  );
}

/** A redelivery's window row (its envelope, or none): refused unless it is exactly the committed event. */
export function redeliveryRefusal(sourceEventId: string, stored: string | undefined, envelope: string): Refusal | null {
  if (stored === undefined)
    return fail("sequence_stale", "/sourceEventId", `${sourceEventId} has left the committed window`);
  if (stored !== envelope) return fail("duplicate_mismatch", "", `${sourceEventId} was committed with other content`);
  return null;
}

/** The credential as re-read inside `reauthorize`, against what the challenge was built from. */
export function reauthorizeRefusal(current: CredentialRow, req: ReauthorizeRequest): Refusal | null {
  if (!sameCredential(current, req.expected))
    return fail("credential_changed", "/credentialId", "the credential changed after the challenge");
  if (current.usedAtUnixMs !== null)
    return fail("credential_used", "/credentialId", "the bootstrap ticket was already used");
  if (current.revokedAtUnixMs !== null) return fail("credential_revoked", "/credentialId", "the credential is revoked");
  if (current.expiresAtUnixMs <= req.nowMs)
    return fail("credential_expired", "/credentialId", "the credential has expired");
  if (current.kind === "bootstrap" && req.mint === null)
    return fail("credential_kind_mismatch", "/credentialKind", "a bootstrap needs a minted lease");
  if (current.kind === "lease" && current.protocolVersion !== req.selectedVersion)
    return fail(
      "version_mismatch",
      "/selectedVersion",
      `the lease was issued under protocol version ${current.protocolVersion}`,
    );
  return null;
}

/** The epoch a revocation raises the run to: `epoch` if greater, else one more. */
export function nextRevocationEpoch(current: number, epoch: number | undefined): Result<number> {
  const next = epoch ?? current + 1;
  if (!Number.isSafeInteger(next) || next <= current)
    return fail(
      "revocation_epoch_not_greater",
      "/revocationEpoch",
      `the revocation epoch must be greater than ${current}`,
    );
  return ok(next);
}

/**
 * §5.9 renewal on the locked run row, the stored lease (or none) and its last renewal: a
 * refusal, a replay of the persisted extension, or the new expiry to write.
 */
export function renewalDecision(
  req: RenewLeaseRequest,
  run: Row,
  lease: RenewalLease | undefined,
  renewal: Row | undefined,
): Result<LeaseRenewal> {
  if (!lease)
    return fail("lease_renewal_refused", "/connectionLeaseId", `run ${req.runId} has no lease ${req.leaseId}`);
  if (lease.revokedAtUnixMs !== null) return fail("credential_revoked", "/connectionLeaseId", "the lease is revoked");
  if (lease.expiresAtUnixMs <= req.nowMs)
    return fail("credential_expired", "/connectionLeaseId", "the lease has expired");
  if (run.current_connection_id !== req.connectionId)
    return fail(
      "connection_superseded",
      "/connectionId",
      `${req.connectionId} is not the current connection of run ${req.runId}`,
    );
  if (run.last_lease_id !== req.leaseId)
    return fail(
      "lease_renewal_refused",
      "/connectionLeaseId",
      "the lease is not the one of the run's current connection",
    );
  const epoch = run.revocation_epoch as number;
  if (req.revocationEpoch !== epoch || lease.revocationEpoch !== epoch)
    return fail("lease_renewal_refused", "/revocationEpoch", `the revocation epoch is not the run's current ${epoch}`);
  if (req.observedExpiresAtUnixMs !== lease.expiresAtUnixMs) {
    if (renewal?.previous_expires_at !== req.observedExpiresAtUnixMs)
      return fail(
        "lease_renewal_refused",
        "/currentExpiresAtUnixMs",
        "the observed expiry is neither the lease's expiry nor the one its last renewal replaced",
      );
    return ok({
      previousExpiresAtUnixMs: req.observedExpiresAtUnixMs,
      expiresAtUnixMs: lease.expiresAtUnixMs,
      revocationEpoch: epoch,
      replayed: true,
    });
  }
  return ok({
    previousExpiresAtUnixMs: lease.expiresAtUnixMs,
    expiresAtUnixMs: Math.max(lease.expiresAtUnixMs, req.nowMs + req.ttlMs),
    revocationEpoch: epoch,
    replayed: false,
  });
}

/** A command may be appended at `controllerSeq` when the run holds `count` commands. */
export function appendCommandRefusal(runId: string, count: number, controllerSeq: number): Refusal | null {
  if (count >= MAX_COMMANDS) return fail("command_queue_full", "", `run ${runId} already has ${MAX_COMMANDS} commands`);
  if (controllerSeq !== count + 1)
    return fail(
      "controller_seq_moved",
      "/controllerSeq",
      `the next controllerSeq is ${count + 1}, not ${controllerSeq}`,
    );
  return null;
}

/** A result for the stored command (or none): a refusal, a duplicate of the stored result, or a new one to write. */
export function commandResultDecision(
  runId: string,
  command: CommandRow | undefined,
  res: NewCommandResult,
): Result<{ duplicate: boolean; command: CommandRow }> {
  if (!command) return fail("unknown_command", "/commandId", `no command ${res.commandId} in run ${runId}`);
  if (command.deliveryCount === 0)
    return fail("command_not_delivered", "/commandId", `${res.commandId} was never delivered`);
  if (command.result !== null) {
    if (command.result !== res.result)
      return fail("command_result_mismatch", "", `${res.commandId} already has a different result`);
    return ok({ duplicate: true, command });
  }
  return ok({ duplicate: false, command: { ...command, status: res.status, result: res.result } });
}

/**
 * `createRun` on a run id already stored: a retry of the same request (same spec digest) finds
 * it again; anything else is refused, because the id was derived from a reused Idempotency-Key
 * or belongs to a run registered without a spec.
 */
export function existingRunRefusal(runId: string, stored: RunSpecRow | undefined, specDigest: string): Refusal | null {
  if (!stored)
    return fail("run_exists", "/runId", `run ${runId} is already in this store, registered without an API spec`);
  if (stored.specDigest !== specDigest)
    return fail(
      "idempotency_key_reused",
      "",
      `this Idempotency-Key already created run ${runId} from another request: use a new key for a new run`,
    );
  return null;
}

/** The opening commands of a new run, checked before any row is written. */
export function openingCommandsRefusal(runId: string, commands: readonly NewCommand[]): Refusal | null {
  for (const [i, c] of commands.entries()) {
    const refused = appendCommandRefusal(runId, i, c.controllerSeq);
    if (refused) return refused;
  }
  const ids = new Set(commands.map((c) => c.commandId));
  return ids.size === commands.length
    ? null
    : fail("command_conflict", "/commands", "two opening commands share an id");
}
