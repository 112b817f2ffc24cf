import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fail, ok, type Result } from "../../src/authority/errors.js";
import { MAX_RENEWAL_BATCH, RenewalBatch } from "../../src/authority/renewal-batch.js";
import type { LeaseRenewal, RenewLeaseRequest } from "../../src/authority/store.js";
import { within } from "../support/within.js";

const request = (runId: string): Omit<RenewLeaseRequest, "nowMs"> => ({
  runId,
  connectionId: "connection_1",
  leaseId: `lease_${runId}`,
  observedExpiresAtUnixMs: 1_000,
  revocationEpoch: 0,
  ttlMs: 60_000,
});

/** A store that records each group it is given and renews every run but `run_refused`. */
function recordingStore(failing = new Set<number>()) {
  const groups: RenewLeaseRequest[][] = [];
  return {
    groups,
    renewLeases: async (requests: readonly RenewLeaseRequest[]): Promise<Array<Result<LeaseRenewal>>> => {
      groups.push([...requests]);
      if (failing.has(groups.length)) throw new Error("disk I/O error");
      return requests.map((r) =>
        r.runId === "run_refused"
          ? fail("lease_renewal_refused", "/connectionLeaseId", "no such lease")
          : ok({
              previousExpiresAtUnixMs: 1_000,
              expiresAtUnixMs: r.nowMs + r.ttlMs,
              revocationEpoch: 0,
              replayed: false,
            }),
      );
    },
  };
}

describe("lease renewals in groups (renewal-batch.ts)", () => {
  it("renewals within one window share one store call, each with its own result, timed when it commits", async () => {
    const store = recordingStore();
    let now = 5_000;
    const batch = new RenewalBatch(store, () => now, 5);
    const asked = [batch.renew(request("run_1")), batch.renew(request("run_refused")), batch.renew(request("run_2"))];
    now = 5_003; // the clock moves while the group waits
    const [a, b, c] = await within(Promise.all(asked), 5_000, "the group's results");
    assert.equal(store.groups.length, 1, "one transaction for the three");
    assert.deepEqual(
      store.groups[0]!.map((r) => [r.runId, r.nowMs]),
      [
        ["run_1", 5_003],
        ["run_refused", 5_003],
        ["run_2", 5_003],
      ],
    );
    assert.equal(a!.ok && a.value.expiresAtUnixMs, 65_003, "the expiry counts from the commit, not the request");
    assert.equal(!b!.ok && b.error.code, "lease_renewal_refused");
    assert.ok(c!.ok);
    await within(batch.renew(request("run_3")), 5_000, "a later renewal");
    assert.equal(store.groups.length, 2, "a renewal after the group committed starts the next one");
  });

  it("a failed transaction rejects its whole group and the next group goes on", async () => {
    const store = recordingStore(new Set([1]));
    const batch = new RenewalBatch(store, () => 0, 1);
    const first = [batch.renew(request("run_1")), batch.renew(request("run_2"))];
    for (const p of first) await assert.rejects(within(p, 5_000, "the failed group"), /disk I\/O error/);
    const next = await within(batch.renew(request("run_1")), 5_000, "the next group");
    assert.ok(next.ok);
  });

  it(`takes at most ${MAX_RENEWAL_BATCH} renewals in one transaction`, async () => {
    const store = recordingStore();
    const batch = new RenewalBatch(store, () => 0, 1);
    const all = Array.from({ length: MAX_RENEWAL_BATCH + 3 }, (_, i) => batch.renew(request(`run_${i}`)));
    const results = await within(Promise.all(all), 5_000, "every renewal");
    assert.ok(results.every((r) => r.ok));
    assert.deepEqual(
      store.groups.map((g) => g.length),
      [MAX_RENEWAL_BATCH, 3],
    );
  });
});
