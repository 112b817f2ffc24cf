import type { Result } from "./errors.js";
import type { AuthorityStore, LeaseRenewal, RenewLeaseRequest } from "./store.js";

/**
 * How long a lease renewal may wait for others to share its store transaction. A runner renews
 * halfway through its lease (30 s of the default 60 s left). Idle runners renew at N / 30 s a
 * second (333 at 10,000), each a commit of its own with an fsync and the same pages written to
 * the log again; a window of 1 s makes that one commit a second whatever N is. Against 100 ms
 * (ten commits a second) it cut the mean of bench:idle at 10,000 runners from 5.8% of a core to
 * 5.1% (bench/README.md).
 */
export const RENEWAL_WINDOW_MS = 1_000;
/** The longest window a host may set: a few seconds of the 30 s a runner leaves itself at the shortest lease. */
export const MAX_RENEWAL_WINDOW_MS = 5_000;
/** A renewal waits at most this share of what is left of its lease, so a late one is not kept past it. */
const LEFT_SHARE_DIVISOR = 4;
/** The most renewals one transaction takes; the rest go in the next, at once. */
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
 * group commits, so the wait never extends a lease past now + TTL. A group commits when its
 * most pressed renewal must: the window, or a quarter of what its runner says is left of its
 * lease (a runner that renews late, after a partition, is not kept waiting until it expires).
 */
export class RenewalBatch {
  private pending: Pending[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** When the timer fires, on the monotonic clock timers run on. */
  private flushAt = Infinity;

  constructor(
    private readonly store: Pick<AuthorityStore, "renewLeases">,
    private readonly now: () => number,
    private readonly windowMs = RENEWAL_WINDOW_MS,
  ) {}

  renew(request: Omit<RenewLeaseRequest, "nowMs">): Promise<Result<LeaseRenewal>> {
    return new Promise((resolve, reject) => {
      this.pending.push({ request, resolve, reject });
      const leftMs = request.observedExpiresAtUnixMs - this.now();
      this.flushWithin(Math.max(0, Math.min(this.windowMs, Math.floor(leftMs / LEFT_SHARE_DIVISOR))));
    });
  }

  private flushWithin(waitMs: number): void {
    const at = performance.now() + waitMs;
    if (at >= this.flushAt) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.flushAt = at;
    this.timer = setTimeout(() => void this.flush(), waitMs);
  }

  private async flush(): Promise<void> {
    this.timer = null;
    this.flushAt = Infinity;
    const group = this.pending.splice(0, MAX_RENEWAL_BATCH);
    if (this.pending.length > 0) this.flushWithin(0); // the rest go next, at once
    const nowMs = this.now();
    try {
      const results = await this.store.renewLeases(group.map((p) => ({ ...p.request, nowMs })));
      group.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      for (const p of group) p.reject(err);
    }
  }
}
