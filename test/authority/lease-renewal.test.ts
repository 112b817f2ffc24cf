import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import type { Authorization, RenewLeaseInput } from "../../src/authority/credentials.js";
import { DEFAULT_LEASE_TTL_MS, STORE_FILE } from "../../src/authority/limits.js";
import { StateError } from "../../src/storage/private-sqlite.js";
import { authority, codeOf, connect, openStore, tempRoot, unwrap, withRun, type Authority } from "./support.js";

/** The lease row and its renewal row as the database file holds them, read apart from the store's code. */
function persisted(
  a: Authority,
  leaseId: string,
): { expiresAt: number; previousExpiresAt: number | null; renewals: number; lastLeaseExpiresAt: number | null } {
  const raw = new Database(join(a.dir, STORE_FILE), { readonly: true });
  try {
    const lease = raw
      .prepare("SELECT credential_id, run_id, expires_at FROM credentials WHERE lease_id = ?")
      .get(leaseId) as { credential_id: string; run_id: string; expires_at: number };
    const renewal = raw
      .prepare("SELECT previous_expires_at, renewals FROM lease_renewals WHERE credential_id = ?")
      .get(lease.credential_id) as { previous_expires_at: number; renewals: number } | undefined;
    const run = raw.prepare("SELECT last_lease_expires_at FROM runs WHERE run_id = ?").get(lease.run_id) as {
      last_lease_expires_at: number | null;
    };
    return {
      expiresAt: lease.expires_at,
      previousExpiresAt: renewal?.previous_expires_at ?? null,
      renewals: renewal?.renewals ?? 0,
      lastLeaseExpiresAt: run.last_lease_expires_at,
    };
  } finally {
    raw.close();
  }
}

/** The renewal request a runner on connection `c` sends, holding `expiresAt`. */
const renewal = (
  c: Authorization,
  expiresAt = c.connectionLeaseExpiresAtUnixMs,
  changes: Partial<RenewLeaseInput> = {},
): RenewLeaseInput => ({
  runId: c.runId,
  connectionId: c.connectionId,
  leaseId: c.connectionLeaseId,
  observedExpiresAtUnixMs: expiresAt,
  revocationEpoch: c.connectionLeaseRevocationEpoch,
  ...changes,
});

describe("authority lease renewal (runtime.md §5.9)", () => {
  const tmp = tempRoot("prp-authority-renewal-");
  after(tmp.cleanup);

  async function connected(): Promise<{ a: Authority; c: Authorization }> {
    const a = authority(tmp.dir());
    await withRun(a);
    return { a, c: await connect(a) };
  }

  it("extends the lease to now + TTL and persists it before answering; the handshake then reads the renewed expiry", async () => {
    const { a, c } = await connected();
    const issued = c.connectionLeaseExpiresAtUnixMs;
    assert.equal(issued, a.clock.now() + DEFAULT_LEASE_TTL_MS);
    a.clock.advance(DEFAULT_LEASE_TTL_MS / 2);
    const renewed = unwrap(await a.credentials.renewLease(renewal(c)));
    const extended = a.clock.now() + DEFAULT_LEASE_TTL_MS;
    assert.deepEqual(renewed, {
      previousExpiresAtUnixMs: issued,
      expiresAtUnixMs: extended,
      revocationEpoch: 0,
      replayed: false,
    });
    assert.deepEqual(persisted(a, c.connectionLeaseId), {
      expiresAt: extended,
      previousExpiresAt: issued,
      renewals: 1,
      lastLeaseExpiresAt: extended,
    });

    // A reconnect with the lease is challenged with what the store holds.
    await a.store.close();
    const reopened = authority(a.dir, { clock: a.clock });
    const lease = (await reopened.credentials.lookupCredential(credentialIdOf(reopened, c.connectionLeaseId)))!;
    assert.equal(lease.expiresAtUnixMs, extended);
    a.clock.advance(DEFAULT_LEASE_TTL_MS - 1); // past the issued expiry, before the renewed one
    const again = unwrap(
      await reopened.credentials.reauthorize({ record: lease, selectedVersion: 3, proofVerified: true }),
    );
    assert.equal(again.connectionLeaseExpiresAtUnixMs, extended);
    await reopened.store.close();
  });

  it("a retry of the same observed expiry gets the persisted extension back, not a second one", async () => {
    const { a, c } = await connected();
    const issued = c.connectionLeaseExpiresAtUnixMs;
    a.clock.advance(30_000);
    const first = unwrap(await a.credentials.renewLease(renewal(c)));
    a.clock.advance(5_000);
    const retry = unwrap(await a.credentials.renewLease(renewal(c)));
    assert.deepEqual(retry, { ...first, replayed: true });
    assert.deepEqual(persisted(a, c.connectionLeaseId), {
      expiresAt: first.expiresAtUnixMs,
      previousExpiresAt: issued,
      renewals: 1,
      lastLeaseExpiresAt: first.expiresAtUnixMs,
    });

    // The next renewal names the extended expiry; after it, the first expiry is two renewals old.
    a.clock.advance(25_000);
    const second = unwrap(await a.credentials.renewLease(renewal(c, first.expiresAtUnixMs)));
    assert.deepEqual(second, {
      previousExpiresAtUnixMs: first.expiresAtUnixMs,
      expiresAtUnixMs: a.clock.now() + DEFAULT_LEASE_TTL_MS,
      revocationEpoch: 0,
      replayed: false,
    });
    const stale = await a.credentials.renewLease(renewal(c, issued));
    assert.equal(codeOf(stale), "lease_renewal_refused");
    assert.equal(stale.ok ? "" : stale.error.path, "/currentExpiresAtUnixMs");
    assert.equal(
      codeOf(await a.credentials.renewLease(renewal(c, second.expiresAtUnixMs + 1))),
      "lease_renewal_refused",
      "an expiry never granted",
    );
    assert.deepEqual(persisted(a, c.connectionLeaseId), {
      expiresAt: second.expiresAtUnixMs,
      previousExpiresAt: first.expiresAtUnixMs,
      renewals: 2,
      lastLeaseExpiresAt: second.expiresAtUnixMs,
    });
    await a.store.close();
  });

  it("never renews an expired lease, even with a retry of a renewal it once granted", async () => {
    const { a, c } = await connected();
    a.clock.advance(30_000);
    const first = unwrap(await a.credentials.renewLease(renewal(c)));
    const before = persisted(a, c.connectionLeaseId);
    a.clock.advance(first.expiresAtUnixMs - a.clock.now());
    for (const observed of [first.expiresAtUnixMs, c.connectionLeaseExpiresAtUnixMs]) {
      assert.equal(codeOf(await a.credentials.renewLease(renewal(c, observed))), "credential_expired");
    }
    assert.deepEqual(persisted(a, c.connectionLeaseId), before);
    await a.store.close();
  });

  it("never renews a revoked lease, nor one named under another epoch", async () => {
    const { a, c } = await connected();
    a.clock.advance(30_000);
    const before = persisted(a, c.connectionLeaseId);
    for (const epoch of [1, 7]) {
      const refused = await a.credentials.renewLease(renewal(c, undefined, { revocationEpoch: epoch }));
      assert.equal(codeOf(refused), "lease_renewal_refused", String(epoch));
      assert.equal(refused.ok ? "" : refused.error.path, "/revocationEpoch");
    }
    assert.equal(unwrap(await a.credentials.revoke("run_1")).revocationEpoch, 1);
    for (const epoch of [0, 1])
      assert.equal(
        codeOf(await a.credentials.renewLease(renewal(c, undefined, { revocationEpoch: epoch }))),
        "credential_revoked",
        String(epoch),
      );
    assert.deepEqual(persisted(a, c.connectionLeaseId), before);
    await a.store.close();
  });

  it("renews only the lease of the run's current connection: another lease, another run or a superseded connection is refused", async () => {
    const a = authority(tmp.dir());
    await withRun(a, 1);
    await withRun(a, 2);
    const c = await connect(a, "run_1");
    const other = await connect(a, "run_2");
    a.clock.advance(30_000);
    assert.equal(
      codeOf(await a.credentials.renewLease(renewal(c, undefined, { leaseId: "connection_lease_unknown" }))),
      "lease_renewal_refused",
    );
    assert.equal(
      codeOf(await a.credentials.renewLease(renewal(c, undefined, { leaseId: other.connectionLeaseId }))),
      "lease_renewal_refused",
      "run 2's lease on run 1",
    );
    assert.equal(codeOf(await a.credentials.renewLease(renewal(c, undefined, { runId: "run_9" }))), "unknown_run");

    // The runner reconnects with its lease: the first connection is superseded.
    const record = (await a.credentials.lookupCredential(credentialIdOf(a, c.connectionLeaseId)))!;
    const reconnected = unwrap(await a.credentials.reauthorize({ record, selectedVersion: 3, proofVerified: true }));
    assert.equal(codeOf(await a.credentials.renewLease(renewal(c))), "connection_superseded");
    // A fresh bootstrap replaces the lease itself: the old lease is no longer the current one.
    const fresh = await connect(a, "run_1");
    assert.equal(
      codeOf(await a.credentials.renewLease(renewal(reconnected, undefined, { connectionId: fresh.connectionId }))),
      "lease_renewal_refused",
    );
    assert.equal(persisted(a, c.connectionLeaseId).renewals, 0);
    assert.equal(
      unwrap(await a.credentials.renewLease(renewal(fresh))).replayed,
      false,
      "the current connection's lease renews",
    );
    await a.store.close();
  });

  it("refuses at open a renewal record that does not fit its lease", async () => {
    const { a, c } = await connected();
    a.clock.advance(30_000);
    unwrap(await a.credentials.renewLease(renewal(c)));
    await a.store.close();
    assert.doesNotThrow(() => openStore(a.dir).close());
    const raw = new Database(join(a.dir, STORE_FILE));
    raw.exec("UPDATE lease_renewals SET previous_expires_at = previous_expires_at + 10000000");
    raw.close();
    assert.throws(
      () => openStore(a.dir),
      (err: unknown) => err instanceof StateError && err.code === "state_credential_invalid",
    );
  });
});

/** A lease's credential id, by its public lease id, read from the database file. */
function credentialIdOf(a: Authority, leaseId: string): string {
  const raw = new Database(join(a.dir, STORE_FILE), { readonly: true });
  try {
    return (
      raw.prepare("SELECT credential_id FROM credentials WHERE lease_id = ?").get(leaseId) as { credential_id: string }
    ).credential_id;
  } finally {
    raw.close();
  }
}
