// The close reasons by which the authority refuses a durable runner, sorted by what the runner does next.

/** The authority's refusals after which the in-memory lease is dropped: only a new bootstrap can open a session. */
export const LEASE_REFUSED: ReadonlySet<string> = new Set([
  "credential_expired",
  "credential_revoked",
  "unknown_credential",
  "credential_used",
  "unauthorized",
]);

/**
 * The authority's refusals of an event that resending the same committed bytes cannot cure (the
 * close reason of the connection it refused the event on): redialling would only resend it
 * forever, so the runner stops. The runner admits events by the authority's own rule
 * (src/contract/admission.ts), so only an outbox written by another build can hold one.
 */
export const INCURABLE_REFUSALS: ReadonlySet<string> = new Set([
  "invalid_event",
  "identity_mismatch",
  "semantic_correlation_mismatch",
  "duplicate_mismatch",
  "event_after_terminal",
]);
