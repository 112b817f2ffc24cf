import type { ResultStatus } from "./limits.js";
import type { RunIdentity } from "./identity.js";
import { StateError } from "../storage/private-sqlite.js";
import { openAuthKeyDigest, sealAuthKeyDigest, type CredentialPlace } from "./sealed-credential.js";
import type { ServerKey } from "./server-key.js";
import type {
  ApiScope,
  ApiTokenRow,
  CommandRow,
  CommittedEventRow,
  CredentialRow,
  DispatchRow,
  DispatchState,
  LiveRunWork,
  LoggedEvent,
  RenewalLease,
  RunCursor,
  RunnerConnection,
  RunSnapshot,
  RunSpecRow,
  WorkerRow,
} from "./store.js";

/**
 * Rows as both stores hold them (the same column names in SQLite and PostgreSQL), read into
 * the shapes of store.ts.
 */
export type Row = Record<string, unknown>;

export const placeOf = (r: Row): CredentialPlace => ({
  credentialId: r.credential_id as string,
  runId: r.run_id as string,
  kind: r.kind as CredentialRow["kind"],
});

/** What a credentials table holds for an auth key: sealed under the server key, bound to its row. */
export function sealedAuthKey(serverKey: ServerKey, authKeyDigest: string, place: CredentialPlace): string {
  const sealed = sealAuthKeyDigest(serverKey, authKeyDigest, place);
  if (sealed === null)
    throw new TypeError(`credential ${place.credentialId}: the auth key digest is not sha256:<64 hex digits>`);
  return sealed;
}

/** A stored credential with its auth key opened. One that does not open in its own row under the server key is never used. */
export const credentialFrom = (r: Row, serverKey: ServerKey, location: string): CredentialRow => {
  const authKeyDigest = openAuthKeyDigest(serverKey, r.auth_key_digest as string, placeOf(r));
  if (authKeyDigest === null)
    throw new StateError(
      "state_credential_invalid",
      location,
      `credential ${String(r.credential_id)}: its sealed auth key does not open in this row under the server key (moved from another row, or altered)`,
    );
  return {
    ...placeOf(r),
    authKeyDigest,
    issuedAtUnixMs: r.issued_at as number,
    expiresAtUnixMs: r.expires_at as number,
    usedAtUnixMs: r.used_at as number | null,
    revokedAtUnixMs: r.revoked_at as number | null,
    leaseId: r.lease_id as string | null,
    revocationEpoch: r.revocation_epoch as number,
    protocolVersion: r.protocol_version as number | null,
  };
};

/**
 * What a lease renewal decides on, read without the auth key: a renewal arrives on a
 * connection whose handshake already proved it, so the key is not opened again for each one.
 */
export const RENEWAL_RUN_COLUMNS = "current_connection_id, last_lease_id, revocation_epoch";

/**
 * The lease a renewal names and the expiry its last renewal replaced (null before one), in one
 * read, given the placeholders of the lease id and the run id, and a locking clause if any.
 */
export const renewalLeaseQuery = ([leaseId, runId]: readonly [string, string], lock = ""): string =>
  `SELECT c.credential_id, c.expires_at, c.revoked_at, c.revocation_epoch, lr.previous_expires_at
   FROM credentials c LEFT JOIN lease_renewals lr ON lr.credential_id = c.credential_id
   WHERE c.lease_id = ${leaseId} AND c.run_id = ${runId} AND c.kind = 'lease'${lock}`;

export const renewalLeaseFrom = (r: Row): RenewalLease => ({
  credentialId: r.credential_id as string,
  expiresAtUnixMs: r.expires_at as number,
  revokedAtUnixMs: r.revoked_at as number | null,
  revocationEpoch: r.revocation_epoch as number,
});

export const commandFrom = (r: Row): CommandRow => ({
  commandId: r.command_id as string,
  controllerSeq: r.controller_seq as number,
  type: r.command_type as string,
  payload: r.payload as string,
  envelope: r.envelope as string,
  queuedAtUnixMs: r.queued_at as number,
  deliveryCount: r.delivery_count as number,
  lastDeliveredConnectionId: r.last_delivered_connection_id as string | null,
  status: r.status as ResultStatus | null,
  result: r.result as string | null,
});

export const eventFrom = (r: Row): CommittedEventRow => ({
  sourceSeq: r.source_seq as number,
  sourceEventId: r.source_event_id as string,
  eventType: r.event_type as string,
  priority: r.priority as number,
  envelope: r.envelope as string,
  deliveryCount: r.delivery_count as number,
  logicalEffectCount: 1,
});

export const loggedFrom = (r: Row): LoggedEvent => ({
  sourceSeq: r.source_seq as number,
  sourceEventId: r.source_event_id as string,
  eventType: r.event_type as string,
  priority: r.priority as number,
  envelope: r.envelope as string,
  committedAtUnixMs: r.committed_at as number,
});

export const identityFrom = (r: Row): RunIdentity => ({
  runnerInstanceId: r.runner_instance_id as string,
  environmentLeaseId: r.environment_lease_id as string,
  runId: r.run_id as string,
  normalizedSessionId: r.normalized_session_id as string,
  turnId: r.turn_id as string,
  itemId: r.item_id as string,
});

/** Every field, so "unchanged" (§5.3 step 6) means unchanged in every respect. */
export const sameCredential = (a: CredentialRow, b: CredentialRow): boolean =>
  (Object.keys(a) as Array<keyof CredentialRow>).every((k) => a[k] === b[k]) &&
  Object.keys(a).length === Object.keys(b).length;

/** A run row as ingest reads it; `terminalSourceSeq` comes from the window. */
export const cursorFrom = (r: Row, terminalSourceSeq: number | null): RunCursor => ({
  identity: identityFrom(r),
  ackedSourceSeq: r.acked_source_seq as number,
  terminalSourceSeq,
  currentConnectionId: r.current_connection_id as string | null,
  revocationEpoch: r.revocation_epoch as number,
  protocolVersion: r.protocol_version as number,
});

/** A row of liveRunWorkQuery: SQLite answers the test as 0 or 1, PostgreSQL as a boolean. */
export const liveRunWorkFrom = (r: Row): LiveRunWork => ({
  runId: r.run_id as string,
  revocationEpoch: r.revocation_epoch as number,
  commandWaiting: r.command_waiting === true || r.command_waiting === 1,
});

/** A run row, its terminal and its commands' delivery counts (in controllerSeq order) as a snapshot. */
export const snapshotFrom = (
  r: Row,
  terminalSourceSeq: number | null,
  deliveries: Array<{ command_id: string; delivery_count: number }>,
): RunSnapshot => ({
  ...cursorFrom(r, terminalSourceSeq),
  connectionCount: r.connection_count as number,
  replayDeliveries: r.replay_deliveries as number,
  duplicateCommandResults: r.duplicate_command_results as number,
  freshBootstraps: r.fresh_bootstraps as number,
  malformedFrames: r.malformed_frames as number,
  lastLeaseId: r.last_lease_id as string | null,
  lastLeaseExpiresAtUnixMs: r.last_lease_expires_at as number | null,
  commandCount: deliveries.length,
  createdAtUnixMs: Number(r.created_at),
  commandDeliveryCounts: Object.fromEntries(deliveries.map((d) => [d.command_id, d.delivery_count])),
});

export const runnerConnectionFrom = (r: Row): RunnerConnection => ({
  connectionId: `connection_${Number(r.connection_number)}`,
  connectedAt: Number(r.connected_at),
  protocolVersion: r.protocol_version as number,
  runnerVersion: r.runner_version as string | null,
  runnerDigest: r.runner_digest as string | null,
  contractDigest: r.contract_digest as string | null,
});

export const apiTokenFrom = (r: Row): ApiTokenRow => ({
  tokenId: r.token_id as string,
  digest: r.digest as string,
  scope: r.scope as ApiScope,
  label: r.label as string,
  createdAtUnixMs: r.created_at as number,
  expiresAtUnixMs: r.expires_at as number | null,
  revokedAtUnixMs: r.revoked_at as number | null,
});

/** A run_specs row (the columns prefixed `spec_` when read beside a run: see run-list-query.ts). */
export const runSpecFrom = (r: Row): RunSpecRow => ({
  runId: r.run_id as string,
  spec: r.spec as string,
  specDigest: r.spec_digest as string,
  labels: JSON.parse(r.labels as string) as Record<string, string>,
  priority: r.priority as number,
  createdBy: r.created_by as string | null,
  createdAtUnixMs: r.spec_created_at as number,
  ...(typeof r.trace_parent === "string" ? { traceParent: r.trace_parent } : {}),
});

/** A boolean as either database returns it (SQLite 0/1, PostgreSQL true/false). */
export const truthy = (v: unknown): boolean => v === true || v === 1 || v === "1";

/** A dispatch row, its labels (run_specs.labels, `{}` when none) read beside it. */
export const dispatchFrom = (r: Row): DispatchRow => ({
  runId: r.run_id as string,
  state: r.state as DispatchState,
  priority: Number(r.priority),
  labels: JSON.parse((r.labels as string | null) ?? "{}") as Record<string, string>,
  queuedAtUnixMs: Number(r.queued_at),
  attempts: Number(r.attempts),
  workerId: r.worker_id as string | null,
  claimRequestId: r.claim_request_id as string | null,
  claimedAtUnixMs: r.claimed_at === null ? null : Number(r.claimed_at),
  endedAtUnixMs: r.ended_at === null ? null : Number(r.ended_at),
  endReason: r.end_reason as string | null,
  endDetail: r.end_detail as string | null,
});

/** A workers row with `active_runs`, its claimed dispatch rows counted. */
export const workerFrom = (r: Row): WorkerRow => ({
  workerId: r.worker_id as string,
  name: r.name as string,
  digest: r.digest as string,
  createdAtUnixMs: Number(r.created_at),
  revokedAtUnixMs: r.revoked_at === null ? null : Number(r.revoked_at),
  labels: JSON.parse(r.labels as string) as Record<string, string>,
  agents: JSON.parse(r.agents as string) as string[],
  maxRuns: Number(r.max_runs),
  draining: truthy(r.draining),
  lastSeenAtUnixMs: r.last_seen_at === null ? null : Number(r.last_seen_at),
  activeRuns: Number(r.active_runs),
});
