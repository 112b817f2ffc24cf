import type { Outcome } from "../contract/result.js";

/**
 * Why a secure session refused something. Every refusal in src/transport is one of these codes,
 * returned as a value; the caller closes the connection (or already has it closed for it) and
 * records the diagnostic. No code carries a secret: messages name fields, never their values
 * when the value is a token, key or proof.
 */
export type TransportErrorCode =
  // endpoint (runtime.md §5.1)
  | "invalid_url"
  | "non_loopback_address"
  | "dns_failed"
  | "connect_failed"
  | "tls_untrusted"
  | "ca_bundle_invalid"
  // upgrade guard (§5.1, §5.4)
  | "origin_refused"
  | "path_refused"
  | "query_refused"
  | "extensions_refused"
  // socket and frame level (§5.4)
  | "frame_too_large"
  | "binary_frame"
  | "websocket_protocol_error"
  | "unmasked_frame"
  | "receive_overflow"
  | "send_overflow"
  | "socket_closed"
  | "auth_timeout"
  | "unexpected_message"
  | "handler_failed"
  // secure frames (§5.4)
  | "invalid_json"
  | "malformed_frame"
  | "plaintext_frame"
  | "frame_replayed"
  | "frame_gap"
  | "tag_mismatch"
  | "counter_exhausted"
  // envelopes (§5.3, §5.5)
  | "malformed_envelope"
  | "protocol_mismatch"
  | "version_mismatch"
  | "unknown_kind"
  | "identity_mismatch"
  | "connection_mismatch"
  | "lease_mismatch"
  | "lease_expired"
  // lease renewal and heartbeats (§5.9, §5.3 step 8)
  | "lease_renewal_refused"
  | "peer_silent"
  // handshake (§5.3)
  | "malformed_handshake"
  | "unknown_credential"
  | "credential_kind_mismatch"
  | "credential_used"
  | "credential_revoked"
  | "credential_expired"
  | "runner_mismatch"
  | "contract_mismatch"
  | "echo_mismatch"
  | "proof_mismatch"
  | "challenge_expired"
  | "unauthorized"
  | "invalid_welcome";

export interface TransportError {
  code: TransportErrorCode;
  /** For `socket_closed`: the reason the peer gave in its close frame (a refusal code), if any. */
  peerCode?: string;
  /** JSON Pointer into the refused message ("" for the whole message or for no message). */
  path: string;
  message: string;
}

export type Result<T> = Outcome<T, TransportError>;

export const transportError = (code: TransportErrorCode, path: string, message: string): TransportError => ({
  code,
  path,
  message,
});

export { ok } from "../contract/result.js";

export const fail = <T = never>(code: TransportErrorCode, path: string, message: string): Result<T> => ({
  ok: false,
  error: transportError(code, path, message),
});

/**
 * Thrown by an envelope handler to refuse what the peer sent: the channel closes with `code` as
 * its close reason, which the peer reads as `peerCode` and can act on (a refusal that resending
 * the same bytes cannot cure, for one). Any other error closes the channel as handler_failed.
 */
export class EnvelopeRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = "EnvelopeRefusal";
  }
}
