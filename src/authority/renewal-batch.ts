import type { Result } from "./errors.js";
import type { AuthorityStore, LeaseRenewal, RenewLeaseRequest } from "./store.js";

/**
 * How long a lease renewal waits for others to share its store transaction. A runner renews
 * halfway through its lease, so it has half the TTL (30 s at the default) to spare. Idle
 * runners renew at N / 30 s a second (333 at 10,000), each a commit of its own with an fsync
 * and the same few pages written to the log again; a window of 100 ms makes that about ten
 * commits a second whatever N is (bench:idle).
 */
export const RENEWAL_WINDOW_MS = 100;
/** The most renewals one transaction takes; the rest wait for the next window. */
export const MAX_RENEWAL_BATCH = 1024;

interface Pending {
  request: Omit<RenewLeaseRequest, "nowMs">;
  resolve: (result: Result<LeaseRenewal>) => void;
  reject: (err: unknown) => void;
}

/**
 * Lease renewals in groups (`AuthorityStore.renewLeases`): each caller's promise settles after
 * the transaction that holds its renewal committed, so a `lease_renewed` never promises an
 * expiry the store does not hold. Every renewal keeps its own result; a failure of the
 * transaction rejects the whole group, none of which was persisted. The clock is read when the
 * group commits, so the wait never extends a lease past now + TTL.
 */
export class RenewalBatch {
  private pending: Pending[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly store: Pick<AuthorityStore, "renewLeases">,
    private readonly now: () => number,
    private readonly windowMs = RENEWAL_WINDOW_MS,
  ) {}

  renew(request: Omit<RenewLeaseRequest, "nowMs">): Promise<Result<LeaseRenewal>> {
    return new Promise((resolve, reject) => {
      this.pending.push({ request, resolve, reject });
      this.timer ??= setTimeout(() => void this.flush(), this.windowMs);
    });
  }

  private async flush(): Promise<void> {
    const group = this.pending.splice(0, MAX_RENEWAL_BATCH);
    this.timer = this.pending.length > 0 ? setTimeout(() => void this.flush(), this.windowMs) : null;
    const nowMs = this.now();
    try {
      const results = await this.store.renewLeases(group.map((p) => ({ ...p.request, nowMs })));
      group.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      for (const p of group) p.reject(err);
    }
  }
}
