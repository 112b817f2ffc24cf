import { randomUUID } from "node:crypto";
import { authKey, authKeyDigest, credentialId } from "../transport/derive.js";
import type { CredentialRecord } from "../transport/handshake.js";
import { fail, ok, type Result } from "./errors.js";
import { MAX_RENEWAL_WINDOW_MS, RENEWAL_WINDOW_MS, RenewalBatch } from "./renewal-batch.js";
import {
  DEFAULT_BOOTSTRAP_TTL_MS,
  DEFAULT_LEASE_TTL_MS,
  MAX_BOOTSTRAP_TTL_MS,
  MAX_LEASE_TTL_MS,
  MIN_BOOTSTRAP_TTL_MS,
  MIN_LEASE_TTL_MS,
} from "./limits.js";
import type {
  AuthorityStore,
  CredentialRow,
  LeaseRenewal,
  MintedLease,
  NewTicket,
  Revocation,
  RunnerBuild,
  RunSnapshot,
} from "./store.js";

export interface CredentialsOptions {
  store: AuthorityStore;
  /** Connection-lease TTL: default 60 s, allowed 60 s – 24 h (§5.9). */
  leaseTtlMs?: number;
  /** How long a lease renewal may wait to share its store commit (default RENEWAL_WINDOW_MS, 0 – MAX_RENEWAL_WINDOW_MS). */
  renewalWindowMs?: number;
  now?: () => number;
}

/** A ticket as issued: the token is returned here once and exists nowhere else on the server. */
export interface IssuedTicket {
  token: string;
  credentialId: string;
  expiresAtUnixMs: number;
}

/**
 * What `reauthorize` is told. `proofVerified` is the caller's statement that the client proof
 * of this handshake verified (src/transport's `ServerHandshake.verify`); the type admits only
 * `true`, and the value is checked too, so that no code path consumes a ticket on a failed or
 * unchecked proof.
 */
export interface ReauthorizeInput {
  /** The record `lookupCredential` returned and the challenge was built from. */
  record: CredentialRecord;
  /** The challenge's selectedVersion: a new lease is pinned to it, an old one must be on it. */
  selectedVersion: number;
  proofVerified: true;
  /** The runner's build from its hello, recorded with the connection. */
  runner?: RunnerBuild;
}

/** The outcome of §5.3 step 6: what the welcome carries, before its pending command. */
export interface Authorization {
  runId: string;
  /** `connection_<n>`: from now on the run's only live connection. */
  connectionId: string;
  connectionLeaseId: string;
  /** The new `lease_<uuid>` after a bootstrap, returned once; null when the runner came with its lease. */
  connectionLeaseToken: string | null;
  connectionLeaseExpiresAtUnixMs: number;
  connectionLeaseRevocationEpoch: number;
  protocolVersion: number;
  ackedSourceSeq: number;
}

/** A runner's `lease_renew` on one connection (§5.9): what it holds, and where it came from. */
export interface RenewLeaseInput {
  runId: string;
  connectionId: string;
  /** The connection's lease (its envelopes' `connectionLeaseId`). */
  leaseId: string;
  /** The expiry the runner holds (`currentExpiresAtUnixMs`). */
  observedExpiresAtUnixMs: number;
  revocationEpoch: number;
}

const isMs = (v: unknown): v is number => Number.isSafeInteger(v);

/** A token's public locator and stored digest. The auth key is zeroed once its digest is spelled. */
function derive(token: string): { credentialId: string; authKeyDigest: string } {
  const key = authKey(token);
  try {
    return { credentialId: credentialId(token), authKeyDigest: authKeyDigest(key) };
  } finally {
    key.fill(0);
  }
}

/**
 * A fresh single-use bootstrap ticket for `runId`, not yet stored: the token (shown once, then
 * dropped) and the row a store keeps. A worker's claim stores it inside the claim's transaction.
 */
export function mintTicket(runId: string, nowMs: number, ttlMs: number): { token: string; ticket: NewTicket } {
  const token = `bootstrap_${randomUUID()}`;
  return { token, ticket: { runId, ...derive(token), issuedAtUnixMs: nowMs, expiresAtUnixMs: nowMs + ttlMs } };
}

/**
 * Bootstrap tickets and connection leases (runtime.md §5.2, §5.3 steps 2 and 6, §5.9).
 *
 * The handshake order, and why it is split in two:
 *   1. `lookupCredential(credentialId)` (no change): the record the challenge is built from;
 *      src/transport checks it is unused, unexpired, unrevoked and for this run.
 *   2. src/transport verifies the client proof. A failed proof stops here: nothing was
 *      consumed, so the same ticket still works (§5.3 "A failed proof does not consume").
 *   3. `reauthorize(...)` (one transaction): the record re-read and unchanged, unexpired;
 *      a bootstrap marked used and its lease minted; the connection becomes the run's only one.
 * Consuming is never part of verifying, so a wrong proof, a timeout or a dropped socket before
 * step 3 leaves the ticket as it was.
 */
export class Credentials {
  private readonly store: AuthorityStore;
  private readonly now: () => number;
  private readonly renewals: RenewalBatch;

  private constructor(
    options: CredentialsOptions,
    readonly leaseTtlMs: number,
  ) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
    this.renewals = new RenewalBatch(this.store, this.now, options.renewalWindowMs);
  }

  static create(options: CredentialsOptions): Result<Credentials> {
    const ttl = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    if (!isMs(ttl) || ttl < MIN_LEASE_TTL_MS || ttl > MAX_LEASE_TTL_MS) {
      return fail(
        "ttl_out_of_range",
        "/leaseTtlMs",
        `the lease TTL must be ${MIN_LEASE_TTL_MS}–${MAX_LEASE_TTL_MS} ms`,
      );
    }
    const window = options.renewalWindowMs ?? RENEWAL_WINDOW_MS;
    if (!Number.isInteger(window) || window < 0 || window > MAX_RENEWAL_WINDOW_MS) {
      return fail(
        "renewal_window_out_of_range",
        "/renewalWindowMs",
        `the lease renewal window must be 0–${MAX_RENEWAL_WINDOW_MS} ms; got ${window}`,
      );
    }
    return ok(new Credentials(options, ttl));
  }

  /**
   * A fresh single-use `bootstrap_<uuid>` for a registered run, TTL 1–60 s (default 5 s). Only
   * its credential id and auth-key digest are stored. Used and expired credentials are pruned
   * first, so the table holds only what can still authenticate.
   */
  async issueBootstrapTicket(runId: string, ttlMs: number = DEFAULT_BOOTSTRAP_TTL_MS): Promise<Result<IssuedTicket>> {
    if (!isMs(ttlMs) || ttlMs < MIN_BOOTSTRAP_TTL_MS || ttlMs > MAX_BOOTSTRAP_TTL_MS) {
      return fail(
        "ttl_out_of_range",
        "/ttlMs",
        `a bootstrap ticket TTL must be ${MIN_BOOTSTRAP_TTL_MS}–${MAX_BOOTSTRAP_TTL_MS} ms`,
      );
    }
    const nowMs = this.now();
    await this.store.prune(nowMs);
    const { token, ticket } = mintTicket(runId, nowMs, ttlMs);
    const stored = await this.store.insertTicket(ticket);
    if (!stored.ok) return stored;
    return ok({ token, credentialId: ticket.credentialId, expiresAtUnixMs: ticket.expiresAtUnixMs });
  }

  /**
   * Step 2's lookup, in the shape src/transport's handshake checks. Used, revoked and expired
   * records are returned as such (until pruned) so the refusal can say which.
   */
  async lookupCredential(credentialId: string): Promise<CredentialRecord | undefined> {
    const row = await this.store.credential(credentialId);
    if (!row) return undefined;
    const run = await this.store.run(row.runId);
    return run ? toRecord(row, run) : undefined;
  }

  /** Step 6, after the proof verified: see the class comment for the order. */
  async reauthorize(input: ReauthorizeInput): Promise<Result<Authorization>> {
    if (input.proofVerified !== true)
      return fail("proof_not_verified", "/clientProof", "a credential is consumed only after its proof verified");
    const row = await this.store.credential(input.record.credentialId);
    if (!row) return fail("unknown_credential", "/credentialId", "no such credential");
    const run = await this.store.run(row.runId);
    if (!run) return fail("unknown_run", "/runId", `no run ${row.runId}`);
    if (!sameRecord(toRecord(row, run), input.record))
      return fail("credential_changed", "/credentialId", "the credential changed after the challenge");
    const nowMs = this.now();
    let token: string | null = null;
    let mint: MintedLease | null = null;
    if (row.kind === "bootstrap") {
      token = `lease_${randomUUID()}`;
      // The lease id is public (it is in every envelope), so it is drawn apart from the token.
      mint = {
        ...derive(token),
        leaseId: `connection_lease_${randomUUID()}`,
        expiresAtUnixMs: nowMs + this.leaseTtlMs,
      };
    }
    const done = await this.store.reauthorize({
      expected: row,
      selectedVersion: input.selectedVersion,
      mint,
      nowMs,
      ...(input.runner ? { runner: input.runner } : {}),
    });
    if (!done.ok) return done;
    const { lease } = done.value;
    return ok({
      runId: row.runId,
      connectionId: done.value.connectionId,
      connectionLeaseId: lease.leaseId!,
      connectionLeaseToken: token,
      connectionLeaseExpiresAtUnixMs: lease.expiresAtUnixMs,
      connectionLeaseRevocationEpoch: lease.revocationEpoch,
      protocolVersion: lease.protocolVersion!,
      ackedSourceSeq: done.value.ackedSourceSeq,
    });
  }

  /**
   * Revokes the run's live leases and unused tickets under a higher epoch (the one given, which
   * must be greater, or the next). The returned epoch goes in the `revoke` frame. The connection
   * stays open so the runner can flush its outbox (§5.9); it can no longer reconnect with the lease.
   */
  async revoke(runId: string, epoch?: number): Promise<Result<Revocation>> {
    return this.store.revoke(runId, epoch, this.now());
  }

  /**
   * Extends the lease of a run's current connection to now + the lease TTL, persisted before
   * this returns, so the `lease_renewed` sent after it never promises more than a reconnect gets
   * (§5.9). A retry of the same observed expiry gets the persisted extension back, not a second
   * one. An expired, revoked or mismatched lease is refused, never renewed. Renewals commit in
   * groups (renewal-batch.ts): this one waits up to RENEWAL_WINDOW_MS for others, less when
   * its lease is nearly out.
   */
  async renewLease(input: RenewLeaseInput): Promise<Result<LeaseRenewal>> {
    return this.renewals.renew({ ...input, ttlMs: this.leaseTtlMs });
  }

  /** Deletes used or expired tickets and revoked or expired leases; the count deleted. */
  async prune(): Promise<number> {
    return this.store.prune(this.now());
  }
}

/** The handshake's view of a stored row (src/transport `CredentialRecord`). */
function toRecord(row: CredentialRow, run: RunSnapshot): CredentialRecord {
  return {
    credentialId: row.credentialId,
    kind: row.kind,
    authKeyDigest: row.authKeyDigest,
    identity: { ...run.identity },
    expiresAtUnixMs: row.expiresAtUnixMs,
    used: row.usedAtUnixMs !== null,
    revoked: row.revokedAtUnixMs !== null,
    leaseId: row.leaseId,
    // A ticket's challenge carries epoch 0 (§5.3 step 3); the stored issue epoch only decides revocation.
    revocationEpoch: row.kind === "lease" ? row.revocationEpoch : 0,
    protocolVersion: row.protocolVersion,
  };
}

function sameRecord(a: CredentialRecord, b: CredentialRecord): boolean {
  const scalar = (
    [
      "credentialId",
      "kind",
      "authKeyDigest",
      "expiresAtUnixMs",
      "used",
      "revoked",
      "leaseId",
      "revocationEpoch",
      "protocolVersion",
    ] as const
  ).every((k) => a[k] === b[k]);
  return (
    scalar &&
    (Object.keys(a.identity) as Array<keyof CredentialRecord["identity"]>).every(
      (k) => a.identity[k] === b.identity?.[k],
    )
  );
}
