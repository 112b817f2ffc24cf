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
import type { SqliteHandle } from "./handle.js";

// Built once: the statement cache is keyed by text, and a text built per renewal is hashed again each time.
const RENEWAL_RUN = `SELECT ${RENEWAL_RUN_COLUMNS} FROM runs WHERE run_id = ?`;
const RENEWAL_LEASE = renewalLeaseQuery(["?", "?"]);

/** Tickets and leases: admission (reauthorize), renewal, revocation and pruning. */
export class SqliteCredentials implements CredentialsPart {
  constructor(private readonly h: SqliteHandle) {}

  async insertTicket(t: NewTicket): Promise<Result<void>> {
    return this.h.write(() => {
      const run = this.h.runRow(t.runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${t.runId}`);
      this.h
        .sql(
          "INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, revocation_epoch) VALUES (?, ?, 'bootstrap', ?, ?, ?, ?)",
        )
        .run(
          t.credentialId,
          t.runId,
          this.h.seal(t.authKeyDigest, { credentialId: t.credentialId, runId: t.runId, kind: "bootstrap" }),
          t.issuedAtUnixMs,
          t.expiresAtUnixMs,
          run.revocation_epoch,
        );
      return ok(undefined);
    });
  }

  credential(credentialId: string): Promise<CredentialRow | undefined> {
    return this.h.read(() => {
      const r = this.h.sql("SELECT * FROM credentials WHERE credential_id = ?").get(credentialId) as Row | undefined;
      return r ? this.h.credentialOf(r) : undefined;
    });
  }

  async reauthorize(req: ReauthorizeRequest): Promise<Result<Reauthorized>> {
    return this.h.write((): Result<Reauthorized> => {
      const stored = this.h.sql("SELECT * FROM credentials WHERE credential_id = ?").get(req.expected.credentialId) as
        Row | undefined;
      if (!stored) return fail("unknown_credential", "/credentialId", "the credential is gone");
      const current = this.h.credentialOf(stored);
      const refused = reauthorizeRefusal(current, req);
      if (refused) return refused;
      const run = this.h.runRow(current.runId)!;
      let lease: CredentialRow;
      if (current.kind === "bootstrap" && req.mint) {
        this.h.sql("UPDATE credentials SET used_at = ? WHERE credential_id = ?").run(req.nowMs, current.credentialId);
        this.h
          .sql(
            "INSERT INTO credentials (credential_id, run_id, kind, auth_key_digest, issued_at, expires_at, lease_id, revocation_epoch, protocol_version) VALUES (?, ?, 'lease', ?, ?, ?, ?, ?, ?)",
          )
          .run(
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
          );
        lease = this.h.credentialOf(
          this.h.sql("SELECT * FROM credentials WHERE credential_id = ?").get(req.mint.credentialId) as Row,
        );
      } else {
        lease = current;
      }
      const n = (run.connection_count as number) + 1;
      const connectionId = `connection_${n}`;
      this.h
        .sql(
          `UPDATE runs SET connection_count = ?, current_connection_id = ?, protocol_version = ?, last_lease_id = ?, last_lease_expires_at = ?,
           fresh_bootstraps = fresh_bootstraps + ? WHERE run_id = ?`,
        )
        .run(
          n,
          connectionId,
          req.selectedVersion,
          lease.leaseId,
          lease.expiresAtUnixMs,
          current.kind === "bootstrap" ? 1 : 0,
          current.runId,
        );
      this.h
        .sql(
          "INSERT INTO runner_connections (run_id, connection_number, connected_at, protocol_version, runner_version, runner_digest, contract_digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .run(
          current.runId,
          n,
          req.nowMs,
          req.selectedVersion,
          req.runner?.runnerVersion ?? null,
          req.runner?.runnerDigest ?? null,
          req.runner?.contractDigest ?? null,
        );
      this.h
        .sql("DELETE FROM runner_connections WHERE run_id = ? AND connection_number <= ?")
        .run(current.runId, n - MAX_RUNNER_CONNECTIONS);
      return ok({
        connectionId,
        lease,
        freshBootstrap: current.kind === "bootstrap",
        ackedSourceSeq: run.acked_source_seq as number,
      });
    });
  }

  async revoke(runId: string, epoch: number | undefined, nowMs: number): Promise<Result<Revocation>> {
    return this.h.write((): Result<Revocation> => {
      const run = this.h.runRow(runId);
      if (!run) return fail("unknown_run", "/runId", `no run ${runId}`);
      const raised = nextRevocationEpoch(run.revocation_epoch as number, epoch);
      if (!raised.ok) return raised;
      const next = raised.value;
      this.h.sql("UPDATE runs SET revocation_epoch = ? WHERE run_id = ?").run(next, runId);
      const revoked = this.h
        .sql(
          "UPDATE credentials SET revoked_at = ? WHERE run_id = ? AND revoked_at IS NULL AND used_at IS NULL AND revocation_epoch < ?",
        )
        .run(nowMs, runId, next).changes;
      return ok({ revocationEpoch: next, revokedCredentials: revoked });
    });
  }

  async renewLeases(requests: readonly RenewLeaseRequest[]): Promise<Array<Result<LeaseRenewal>>> {
    return this.h.write(() => requests.map((req) => this.renewOne(req)));
  }

  private renewOne(req: RenewLeaseRequest): Result<LeaseRenewal> {
    const run = this.h.sql(RENEWAL_RUN).get(req.runId) as Row | undefined;
    if (!run) return fail("unknown_run", "/runId", `no run ${req.runId}`);
    const stored = this.h.sql(RENEWAL_LEASE).get(req.leaseId, req.runId) as Row | undefined;
    const lease = stored ? renewalLeaseFrom(stored) : undefined;
    const decided = renewalDecision(req, run, lease, stored);
    if (!decided.ok || decided.value.replayed || !lease) return decided;
    const { expiresAtUnixMs } = decided.value;
    this.h
      .sql("UPDATE credentials SET expires_at = ? WHERE credential_id = ?")
      .run(expiresAtUnixMs, lease.credentialId);
    this.h
      .sql(
        `INSERT INTO lease_renewals (credential_id, previous_expires_at, renewals, renewed_at) VALUES (?, ?, 1, ?)
         ON CONFLICT (credential_id) DO UPDATE SET previous_expires_at = excluded.previous_expires_at, renewals = renewals + 1, renewed_at = excluded.renewed_at`,
      )
      .run(lease.credentialId, lease.expiresAtUnixMs, req.nowMs);
    this.h.sql("UPDATE runs SET last_lease_expires_at = ? WHERE run_id = ?").run(expiresAtUnixMs, req.runId);
    return decided;
  }

  async prune(nowMs: number): Promise<number> {
    return this.h.write(
      () =>
        this.h
          .sql("DELETE FROM credentials WHERE used_at IS NOT NULL OR revoked_at IS NOT NULL OR expires_at <= ?")
          .run(nowMs).changes,
    );
  }
}
