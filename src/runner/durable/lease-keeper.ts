import {
  LEASE_RENEWAL_VERSION,
  transportError,
  type LeaseRenewPayload,
  type Payload,
  type RunnerLease,
  type RunnerToCoreKind,
  type SecureChannel,
  type Timers,
} from "../../transport/index.js";

/** The shortest wait before asking again for a renewal that went unanswered. */
const RETRY_FLOOR_MS = 1_000;

type RenewingChannel = Pick<SecureChannel<RunnerToCoreKind>, "send" | "renewLease" | "abort">;

export interface LeaseKeeperOptions {
  channel: RenewingChannel;
  /** The lease the welcome granted. */
  lease: RunnerLease;
  /** The welcome's `connectionLeaseRenewalVersion`: renewal only when the authority offers this runner's. */
  renewalVersion: number | undefined;
  /** The lease clock: the same one the channel checks expiry with. */
  timers: Timers;
  /** The lease to reconnect with changed: a renewal went out, or one was adopted. */
  onLease(lease: RunnerLease): void;
}

/**
 * Keeps one connection's lease alive (runtime.md §5.9 "Lease renewal"): halfway through the
 * remaining lease it sends `lease_renew` with the expiry and epoch it holds, and adopts the
 * `lease_renewed` answer only when that echoes them and extends the lease; any other answer
 * closes the connection. One renewal is in flight at a time; one left unanswered is asked again
 * with the same observed expiry — halfway through what then remains — which the authority
 * answers with the extension it already persisted. It lives as long as the connection.
 */
export class LeaseKeeper {
  private lease: RunnerLease;
  private inFlight: LeaseRenewPayload | null = null;
  private cancel: (() => void) | null = null;

  constructor(private readonly options: LeaseKeeperOptions) {
    this.lease = options.lease;
    if (options.renewalVersion === LEASE_RENEWAL_VERSION) this.schedule();
  }

  /** The answer to this keeper's `lease_renew`. */
  renewed(payload: Payload): void {
    const sent = this.inFlight;
    const refuse = (path: string, message: string) =>
      this.options.channel.abort(transportError("lease_mismatch", path, message));
    if (sent === null)
      return this.options.channel.abort(
        transportError("unexpected_message", "/kind", "lease_renewed came with no lease_renew outstanding"),
      );
    if (payload.previousExpiresAtUnixMs !== sent.currentExpiresAtUnixMs)
      return refuse("/payload/previousExpiresAtUnixMs", "the echoed expiry is not the one this runner sent");
    if (payload.revocationEpoch !== sent.revocationEpoch)
      return refuse("/payload/revocationEpoch", "the echoed revocation epoch is not the one this runner sent");
    const expiresAtUnixMs = payload.connectionLeaseExpiresAtUnixMs as number;
    if (expiresAtUnixMs < sent.currentExpiresAtUnixMs)
      return refuse("/payload/connectionLeaseExpiresAtUnixMs", "the renewed lease would end before the one it renews");
    this.inFlight = null;
    this.stop(); // the retry of this renewal, if one is pending
    const { renewalUnanswered: _answered, ...lease } = this.lease;
    this.lease = { ...lease, expiresAtUnixMs };
    this.options.channel.renewLease(expiresAtUnixMs);
    this.options.onLease(this.lease);
    this.schedule();
  }

  stop(): void {
    this.cancel?.();
    this.cancel = null;
  }

  private schedule(): void {
    const remainingMs = this.lease.expiresAtUnixMs - this.options.timers.now();
    this.cancel = this.options.timers.after(Math.max(0, Math.floor(remainingMs / 2)), () => this.renew());
  }

  /** An unanswered renewal is asked again, no more often than every RETRY_FLOOR_MS, until the lease runs out. */
  private scheduleRetry(): void {
    const remainingMs = this.lease.expiresAtUnixMs - this.options.timers.now();
    if (remainingMs <= 0) return; // expired: the channel refuses what comes next and the connect loop takes over
    this.cancel = this.options.timers.after(Math.max(RETRY_FLOOR_MS, Math.floor(remainingMs / 2)), () => this.renew());
  }

  private renew(): void {
    this.cancel = null;
    const request: LeaseRenewPayload = {
      currentExpiresAtUnixMs: this.lease.expiresAtUnixMs,
      revocationEpoch: this.lease.revocationEpoch,
    };
    if (!this.options.channel.send("lease_renew", { ...request }).ok) return; // closed: the connect loop redials
    this.inFlight = request;
    this.lease = { ...this.lease, renewalUnanswered: true };
    this.options.onLease(this.lease);
    this.scheduleRetry();
  }
}
