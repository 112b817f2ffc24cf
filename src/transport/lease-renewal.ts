/** The payloads of connection-lease renewal (runtime.md §5.9), as `checkControlEnvelope` admits them. */

/** Runner → core: the expiry the runner holds and its revocation epoch. */
export interface LeaseRenewPayload {
  currentExpiresAtUnixMs: number;
  revocationEpoch: number;
}

/** Core → runner, once the extension is persisted: the previous expiry echoed, and the new one. */
export interface LeaseRenewedPayload {
  previousExpiresAtUnixMs: number;
  connectionLeaseExpiresAtUnixMs: number;
  connectionLeaseExpiresAt: string;
  revocationEpoch: number;
}

export const leaseRenewedPayload = (
  previousExpiresAtUnixMs: number,
  expiresAtUnixMs: number,
  revocationEpoch: number,
): LeaseRenewedPayload => ({
  previousExpiresAtUnixMs,
  connectionLeaseExpiresAtUnixMs: expiresAtUnixMs,
  connectionLeaseExpiresAt: new Date(expiresAtUnixMs).toISOString(),
  revocationEpoch,
});
