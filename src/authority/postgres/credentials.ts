import type pg from "pg";
import { fail, ok, type Result } from "../errors.js";
import { MAX_RUNNER_CONNECTIONS } from "../limits.js";
import { nextRevocationEpoch, reauthorizeRefusal, renewalDecision } from "../store-rules.js";
import { RENEWAL_RUN_COLUMNS, renewalLeaseFrom, renewalLeaseQuery, type Row } from "../store-rows.js";
import type {
  CredentialRow,
  CredentialsPart,
  LeaseRenewal,
  NewTicket,
  ReauthorizeRequest,
  Reauthorized,
  RenewLeaseRequest,
  Revocation,
} from "../store.js";
import type { PostgresHandle } from "./handle.js";

// Built once, not per renewal.
const RENEWAL_RUN = `SELECT ${RENEWAL_RUN_COLUMNS} FROM runs WHERE run_id = $1 FOR UPDATE`;
const RENEWAL_LEASE = renewalLeaseQuery(["$1", "$2"], " FOR UPDATE OF c");

/** Tickets and leases: admission (reauthorize), renewal, revocation and pruning, each under the run row's lock. */
export class PostgresCredentials implements CredentialsPart {
  constructor(private readonly h: PostgresHandle) {}

  async insertTicket(t: NewTicket): Promise<Result<void>> {
    return this.h.transaction(async (c) => {
      const run = await this.h.lockRun(c, t.runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${t.runId}`);
      await c.query(
        "INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, revocation_epoch) VALUES ($1, $2, 'bootstrap', $3, $4, $5, $6)",
        [
          t.credentialId,
          t.runId,
          this.h.seal(t.authKeyDigest, { credentialId: t.credentialId, runId: t.runId, kind: "bootstrap" }),
          t.issuedAtUnixMs,
          t.expiresAtUnixMs,
          run.revocation_epoch,
        ],
      );
      return ok(undefined);
    });
  }

  async credential(credentialId: string): Promise<CredentialRow | undefined> {
    const [r] = await this.h.query("SELECT * FROM credentials WHERE credential_id = $1", [credentialId]);
    return r ? this.h.credentialOf(r) : undefined;
  }

  async reauthorize(req: ReauthorizeRequest): Promise<Result<Reauthorized>> {
    return this.h.transaction(async (c): Promise<Result<Reauthorized>> => {
      // The run row first, then the credential: the one lock order of every method.
      const run = await this.h.lockRun(c, req.expected.runId);
      const [stored] = (
        await c.query("SELECT * FROM credentials WHERE credential_id = $1 FOR UPDATE", [req.expected.credentialId])
      ).rows as Row[];
      if (!stored || !run) return fail("unknown_credential", "/credentialId", "the credential is gone");
      const current = this.h.credentialOf(stored);
      const refused = reauthorizeRefusal(current, req);
      if (refused) return refused;
      let lease = current;
      if (current.kind === "bootstrap" && req.mint) {
        await c.query("UPDATE credentials SET used_at = $1 WHERE credential_id = $2", [
          req.nowMs,
          current.credentialId,
        ]);
        const [minted] = (
          await c.query(
            `INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, lease_id, revocation_epoch, protocol_version)
             VALUES ($1, $2, 'lease', $3, $4, $5, $6, $7, $8) RETURNING *`,
            [
              req.mint.credentialId,
              current.runId,
              this.h.seal(req.mint.authKeyDigest, {
                credentialId: req.mint.credentialId,
                runId: current.runId,
                kind: "lease",
              }),
              req.nowMs,
              req.mint.expiresAtUnixMs,
              req.mint.leaseId,
              run.revocation_epoch,
              req.selectedVersion,
            ],
          )
        ).rows as Row[];
        lease = this.h.credentialOf(minted!);
      }
      const n = (run.connection_count as number) + 1;
      const connectionId = `connection_${n}`;
      await c.query(
        `UPDATE runs SET connection_count = connection_count + 1, current_connection_id = $1, protocol_version = $2, last_lease_id = $3, last_lease_expires_at = $4,
           fresh_bootstraps = fresh_bootstraps + $5 WHERE run_id = $6`,
        [
          connectionId,
          req.selectedVersion,
          lease.leaseId,
          lease.expiresAtUnixMs,
          current.kind === "bootstrap" ? 1 : 0,
          current.runId,
        ],
      );
      await c.query(
        "INSERT INTO runner_connections (run_id, connection_number, connected_at, protocol_version, runner_version, runner_digest, contract_digest) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        [
          current.runId,
          n,
          req.nowMs,
          req.selectedVersion,
          req.runner?.runnerVersion ?? null,
          req.runner?.runnerDigest ?? null,
          req.runner?.contractDigest ?? null,
        ],
      );
      await c.query("DELETE FROM runner_connections WHERE run_id = $1 AND connection_number <= $2", [
        current.runId,
        n - MAX_RUNNER_CONNECTIONS,
      ]);
      return ok({
        connectionId,
        lease,
        freshBootstrap: current.kind === "bootstrap",
        ackedSourceSeq: run.acked_source_seq as number,
      });
    });
  }

  async revoke(runId: string, epoch: number | undefined, nowMs: number): Promise<Result<Revocation>> {
    return this.h.transaction(async (c): Promise<Result<Revocation>> => {
      const run = await this.h.lockRun(c, runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${runId}`);
      const raised = nextRevocationEpoch(run.revocation_epoch as number, epoch);
      if (!raised.ok) return raised;
      const next = raised.value;
      await c.query("UPDATE runs SET revocation_epoch = $1 WHERE run_id = $2", [next, runId]);
      const revoked = await c.query(
        "UPDATE credentials SET revoked_at = $1 WHERE run_id = $2 AND revoked_at IS NULL AND used_at IS NULL AND revocation_epoch < $3",
        [nowMs, runId, next],
      );
      await this.h.notify(c, { kind: "revoked", runId, revocationEpoch: next });
      return ok({ revocationEpoch: next, revokedCredentials: revoked.rowCount ?? 0 });
    });
  }

  /**
   * The renewals in run order, whatever order they came in: two authorities renewing leases of
   * the same runs then take the runs' row locks in one order and cannot deadlock.
   */
  async renewLeases(requests: readonly RenewLeaseRequest[]): Promise<Array<Result<LeaseRenewal>>> {
    const runOf = (i: number) => requests[i]!.runId;
    const order = requests
      .map((_, i) => i)
      .sort((a, b) => (runOf(a) < runOf(b) ? -1 : runOf(a) > runOf(b) ? 1 : a - b));
    return this.h.transaction(async (c) => {
      const results: Array<Result<LeaseRenewal>> = new Array(requests.length);
      for (const i of order) results[i] = await this.renewOne(c, requests[i]!);
      return results;
    });
  }

  private async renewOne(c: pg.PoolClient, req: RenewLeaseRequest): Promise<Result<LeaseRenewal>> {
    const [run] = (await c.query(RENEWAL_RUN, [req.runId])).rows as Row[];
    if (!run) return fail("unknown_run", "/runId", `no run ${req.runId}`);
    const [stored] = (await c.query(RENEWAL_LEASE, [req.leaseId, req.runId])).rows as Row[];
    const lease = stored ? renewalLeaseFrom(stored) : undefined;
    const decided = renewalDecision(req, run, lease, stored);
    if (!decided.ok || decided.value.replayed || !lease) return decided;
    // The three writes in one statement: one round trip, not three.
    await c.query(
      `WITH lease AS (UPDATE credentials SET expires_at = $1 WHERE credential_id = $2),
       renewal AS (
         INSERT INTO lease_renewals (credential_id, previous_expires_at, renewals, renewed_at) VALUES ($2, $3, 1, $4)
         ON CONFLICT (credential_id) DO UPDATE SET previous_expires_at = excluded.previous_expires_at,
           renewals = lease_renewals.renewals + 1, renewed_at = excluded.renewed_at)
       UPDATE runs SET last_lease_expires_at = $1 WHERE run_id = $5`,
      [decided.value.expiresAtUnixMs, lease.credentialId, lease.expiresAtUnixMs, req.nowMs, req.runId],
    );
    return decided;
  }

  async prune(nowMs: number): Promise<number> {
    const deleted = await this.h.pool.query(
      "DELETE FROM credentials WHERE used_at IS NOT NULL OR revoked_at IS NOT NULL OR expires_at <= $1",
      [nowMs],
    );
    return deleted.rowCount ?? 0;
  }
}
