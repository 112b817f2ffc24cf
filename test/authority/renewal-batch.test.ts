import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fail, ok, type Result } from "../../src/authority/errors.js";
import { Credentials } from "../../src/authority/credentials.js";
import { MAX_RENEWAL_BATCH, MAX_RENEWAL_WINDOW_MS, RenewalBatch } from "../../src/authority/renewal-batch.js";
import type { AuthorityStore, LeaseRenewal, RenewLeaseRequest } from "../../src/authority/store.js";
import { within } from "../support/within.js";

/** A runner's renewal of a lease it says expires at `expiresAt` (by default long after any clock here). */
const request = (runId: string, expiresAt = 1e12): Omit<RenewLeaseRequest, "nowMs"> => ({
  runId,
  connectionId: "connection_1",
  leaseId: `lease_${runId}`,
  observedExpiresAtUnixMs: expiresAt,
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

  it("a renewal whose lease is nearly out commits within a quarter of what is left, and takes the waiting group with it", async () => {
    const store = recordingStore();
    const now = 1_000_000;
    const batch = new RenewalBatch(store, () => now, 60_000); // a window no test waits out
    const waiting = batch.renew(request("run_1"));
    const pressed = batch.renew(request("run_2", now + 400)); // 400 ms left: it may wait 100 ms
    const [a, b] = await within(Promise.all([waiting, pressed]), 5_000, "the pressed renewal's group");
    assert.ok(a!.ok && b!.ok);
    assert.deepEqual(
      store.groups.map((g) => g.map((r) => r.runId)),
      [["run_1", "run_2"]],
    );
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

  it(`a host's window is a whole number of ms from 0 to ${MAX_RENEWAL_WINDOW_MS}, refused otherwise with its field named`, () => {
    const store = {} as AuthorityStore; // create() checks its options only
    for (const ms of [0, 1_000, MAX_RENEWAL_WINDOW_MS])
      assert.ok(Credentials.create({ store, renewalWindowMs: ms }).ok);
    for (const ms of [-1, 1.5, Number.NaN, MAX_RENEWAL_WINDOW_MS + 1]) {
      const refused = Credentials.create({ store, renewalWindowMs: ms });
      assert.ok(!refused.ok, String(ms));
      assert.equal(refused.error.code, "renewal_window_out_of_range");
      assert.equal(refused.error.path, "/renewalWindowMs");
    }
  });
});
