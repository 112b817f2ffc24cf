import type { Outcome } from "../contract/result.js";

/**
 * Why the authority refused something. Every refusal in src/authority is one of these codes,
 * returned as a value. On an open runner connection every refusal of ingest or of a command
 * result means: close the connection (runtime.md §5.6, §5.8); the runner resends on reconnect
 * and nothing durable was changed by the refused message. Messages name fields, never a token.
 */
export type AuthorityErrorCode =
  // runs and configuration (§6.1)
  | "invalid_identity"
  | "run_identity_mismatch"
  | "unknown_run"
  | "ttl_out_of_range"
  | "heartbeat_out_of_range"
  | "renewal_window_out_of_range"
  | "invalid_protocol_version"
  // credentials (§5.3 steps 2 and 6, §5.9); the names match src/transport's handshake codes
  | "unknown_credential"
  | "credential_kind_mismatch"
  | "credential_used"
  | "credential_revoked"
  | "credential_expired"
  | "credential_changed"
  | "proof_not_verified"
  | "version_mismatch"
  | "revocation_epoch_not_greater"
  | "lease_renewal_refused"
  // ingest (§5.6, §6.5)
  | "invalid_event"
  | "identity_mismatch"
  | "semantic_correlation_mismatch"
  | "duplicate_mismatch"
  | "sequence_gap"
  | "sequence_stale"
  // a run's committed run.terminal is its last event (runtime.md §4.3): nothing follows it
  | "event_after_terminal"
  | "callback_failed"
  | "connection_superseded"
  // the store (§6.2): full, refusing writes, or not reachable; nothing was committed
  | "store_full"
  | "store_read_only"
  | "store_unavailable"
  // commands (§5.8)
  | "invalid_command"
  | "controller_seq_moved"
  | "command_conflict"
  | "command_too_large"
  | "command_queue_full"
  | "invalid_command_result"
  | "unknown_command"
  // a run whose run.terminal is committed takes no more commands
  | "run_ended"
  // the HTTP API (src/api): tokens, runs created from a spec, the run list
  | "token_missing"
  | "token_invalid"
  | "token_exists"
  | "unknown_token"
  | "run_exists"
  | "idempotency_key_reused"
  | "invalid_request"
  | "agent_profile_unknown"
  | "command_not_delivered"
  | "command_result_mismatch"
  // the run queue: workers, claims, caps
  | "worker_exists"
  | "unknown_worker"
  | "worker_revoked"
  | "run_claimed"
  | "not_queued"
  // a command type the run's negotiated protocol version does not have (wire.md D2)
  | "command_needs_newer_version";

export interface AuthorityError {
  code: AuthorityErrorCode;
  /** JSON Pointer into the refused value ("" for the whole value or for no value). */
  path: string;
  message: string;
}

/** A refusal is assignable to every Result, so one value can be passed on whatever the caller returns. */
export type Refusal = { ok: false; error: AuthorityError };
export type Result<T> = Outcome<T, AuthorityError>;

export const authorityError = (code: AuthorityErrorCode, path: string, message: string): AuthorityError => ({
  code,
  path,
  message,
});
export { ok } from "../contract/result.js";
export const fail = (code: AuthorityErrorCode, path: string, message: string): Refusal => ({
  ok: false,
  error: authorityError(code, path, message),
});

/** An event after the run's committed run.terminal: refused by ingest and again inside the commit. */
export const terminalCommitted = (sourceSeq: number, terminalSourceSeq: number): AuthorityError =>
  authorityError(
    "event_after_terminal",
    "/sourceSeq",
    `sourceSeq ${sourceSeq} follows the run's committed run.terminal (sourceSeq ${terminalSourceSeq}): a committed terminal is final`,
  );
