import {
  leaseRenewedPayload,
  transportError,
  type ControlEnvelope,
  type CoreToRunnerKind,
  type SecureChannel,
  type TransportError,
} from "../transport/index.js";
import type { Credentials } from "./credentials.js";
import type { AuthorityError } from "./errors.js";

type RenewingChannel = Pick<SecureChannel<Exclude<CoreToRunnerKind, "welcome">>, "send" | "renewLease" | "abort">;

/** An expired or revoked lease closes under that name; any other mismatch as a refused renewal. */
function refusal(error: AuthorityError): TransportError {
  if (error.code === "credential_expired" || error.code === "credential_revoked")
    return transportError(error.code, error.path, error.message);
  return transportError("lease_renewal_refused", error.path, `${error.code}: ${error.message}`);
}

/**
 * Answers a runner's `lease_renew` on its connection (runtime.md §5.9): the store checks and
 * persists the extension in one transaction, then this connection's envelopes are accepted until
 * the new expiry and `lease_renewed` echoes the previous one. A refusal closes the connection
 * with its code; nothing was extended.
 */
export async function answerLeaseRenew(
  credentials: Credentials,
  channel: RenewingChannel,
  runId: string,
  connectionId: string,
  envelope: ControlEnvelope,
): Promise<void> {
  const payload = envelope.payload;
  const renewed = await credentials.renewLease({
    runId,
    connectionId,
    leaseId: envelope.connectionLeaseId,
    observedExpiresAtUnixMs: payload.currentExpiresAtUnixMs as number,
    revocationEpoch: payload.revocationEpoch as number,
  });
  if (!renewed.ok) return channel.abort(refusal(renewed.error));
  const { previousExpiresAtUnixMs, expiresAtUnixMs, revocationEpoch } = renewed.value;
  channel.renewLease(expiresAtUnixMs);
  channel.send("lease_renewed", { ...leaseRenewedPayload(previousExpiresAtUnixMs, expiresAtUnixMs, revocationEpoch) });
}
