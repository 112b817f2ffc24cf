import type BetterSqlite3 from "better-sqlite3";
import type { PoolClient } from "pg";
import type { CredentialKind } from "../transport/handshake-payloads.js";
import type { Result } from "./errors.js";
import type { RunIdentity } from "./identity.js";
import type { ResultStatus } from "./limits.js";

/**
 * The authority's durable store (runtime.md §6.2), keyed by runId so that one authority
 * process serves many runs. SQLite implements it by default (sqlite-store.ts); a PostgreSQL
 * store for multi-instance control planes implements the same interface.
 *
 * Every method is one atomic unit: one transaction, all or nothing. The checks a change
 * depends on (the cursor, the current connection, an unchanged credential, the next
 * controllerSeq) are re-made inside that transaction, as compare-and-set, because the caller's
 * earlier read may be stale (another instance, or the await on `onCommittedEvent`). A
 * PostgreSQL store makes them under `SELECT … FOR UPDATE` of the run or credential row.
 *
 * Methods are async so that a networked store fits; refusals are values, I/O failures reject.
 * The store never sees a raw ticket or lease token: only credential ids and auth-key digests.
 * An auth-key digest is the HMAC key itself (§5.2), so a store writes it sealed under the
 * server key (sealed-credential.ts) and opens it on read: its database alone opens nothing.
 */
export interface AuthorityStore extends DispatchPart {
  /**
   * Registers a run, or finds it again after a restart. The identity must be exactly the one
   * stored for that runId (`run_identity_mismatch` otherwise).
   */
  registerRun(identity: RunIdentity, init: RunInit): Promise<Result<RunSnapshot>>;
  run(runId: string): Promise<RunSnapshot | undefined>;
  /** What ingest checks for each event: one row, without the command scan of `run`. */
  runCursor(runId: string): Promise<RunCursor | undefined>;
  runIds(): Promise<string[]>;
  /**
   * What a full read of the live runs acts on (AuthorityServer.syncLiveRuns), for every run
   * given, in one query whatever their number: an unknown id is left out.
   */
  liveRunWork(runIds: readonly string[]): Promise<LiveRunWork[]>;

  /** Stores a new bootstrap ticket (digest only) for a registered run. */
  insertTicket(ticket: NewTicket): Promise<Result<void>>;
  credential(credentialId: string): Promise<CredentialRow | undefined>;
  /** §5.3 step 6, atomically: see ReauthorizeRequest. */
  reauthorize(request: ReauthorizeRequest): Promise<Result<Reauthorized>>;
  /**
   * Raises the run's revocation epoch (to `epoch`, which must be greater, or by one) and
   * revokes every live lease and unused ticket issued under a lower epoch.
   */
  revoke(runId: string, epoch: number | undefined, nowMs: number): Promise<Result<Revocation>>;
  /**
   * §5.9 lease renewals, in one transaction (see RenewLeaseRequest): each its own result, in
   * the order given; a refusal persists nothing of that renewal and leaves the others be.
   */
  renewLeases(requests: readonly RenewLeaseRequest[]): Promise<Array<Result<LeaseRenewal>>>;
  /** Deletes used or expired tickets and revoked or expired leases (§6.2). */
  prune(nowMs: number): Promise<number>;

  committedEvent(runId: string, sourceEventId: string): Promise<CommittedEventRow | undefined>;
  committedWindow(runId: string): Promise<CommittedEventRow[]>;
  /**
   * A redelivery of a committed event: if the window still holds `sourceEventId` with exactly
   * `envelope`, its deliveryCount and the run's replayDeliveries go up by one.
   */
  countRedelivery(
    runId: string,
    connectionId: string,
    sourceEventId: string,
    envelope: string,
  ): Promise<Result<{ ackedSourceSeq: number }>>;
  /**
   * §5.6 steps 5–6, one transaction: only if `event.sourceSeq` is ackedSourceSeq + 1, no
   * run.terminal precedes it and `connectionId` is the run's current connection, it appends the
   * event to the run log and the window, advances ackedSourceSeq, trims the window to its newest
   * 64 rows, and runs `withinCommit` (the host's own rows) inside that same transaction before
   * it commits. If `withinCommit` throws, everything is rolled back and `callback_failed` is
   * returned: the event is not committed and must not be acknowledged.
   */
  commitEvent(
    runId: string,
    connectionId: string,
    event: NewCommittedEvent,
    nowMs: number,
    withinCommit?: WithinCommit,
  ): Promise<Result<{ ackedSourceSeq: number }>>;
  /**
   * Group commit: every item under exactly `commitEvent`'s rules, in ONE transaction; the items
   * of one run in item order (a store may take runs in another order, e.g. PostgreSQL locks run
   * rows in runId order so that two instances' batches cannot deadlock). Each item runs inside its own savepoint, so an item that is refused, or whose
   * `withinCommit` throws (`callback_failed`), is rolled back alone and the others still commit:
   * its result is its refusal. The results are in item order; none is durable before the
   * promise settles. Items of one run see the earlier items of the batch (seq 1 then 2 both
   * commit). A failure of the transaction itself (I/O, COMMIT) rejects: nothing committed.
   */
  commitEvents(items: readonly BatchedEvent[], nowMs: number): Promise<Array<Result<{ ackedSourceSeq: number }>>>;
  /**
   * The run's durable log: every committed event with sourceSeq > `afterSourceSeq`, in
   * sourceSeq order, at most `limit` of them. Unlike the window it is never trimmed.
   */
  eventLog(runId: string, afterSourceSeq: number, limit: number): Promise<LoggedEvent[]>;

  command(runId: string, commandId: string): Promise<CommandRow | undefined>;
  commands(runId: string): Promise<CommandRow[]>;
  /**
   * When each command without a result was queued, oldest first, at most `limit`: the command
   * queue over every run that has not ended, its runner connected or not (the command gauges).
   */
  pendingCommandTimes(limit: number): Promise<number[]>;
  /** Appends a command, only if `command.controllerSeq` is the run's count + 1 and the id is new. */
  appendCommand(runId: string, command: NewCommand, nowMs: number): Promise<Result<CommandRow>>;
  /**
   * The lowest command without a result, its delivery counted, for `connectionId`. Null when
   * there is none, or when it was already delivered on this connection and `repeat` is not set
   * (it is in flight: the runner answers it before anything else is sent).
   */
  deliverNextCommand(
    runId: string,
    connectionId: string,
    repeat: boolean,
    nowMs: number,
  ): Promise<Result<CommandRow | null>>;
  /**
   * Persists a delivered command's result; a repeat must carry exactly the stored result
   * (then duplicateCommandResults goes up by one and `duplicate` is true).
   */
  recordCommandResult(
    runId: string,
    connectionId: string,
    result: NewCommandResult,
    nowMs: number,
  ): Promise<Result<{ duplicate: boolean; command: CommandRow }>>;

  /** A frame or event refused for its content: counted, with a diagnostic. */
  recordMalformedFrame(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void>;
  /** Keeps the newest 32 per run. */
  recordDiagnostic(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void>;
  /** A connection refused before authentication: counted per code; its first and latest kept apart from the 32. */
  recordAuthFailure(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void>;
  diagnostics(runId: string): Promise<Diagnostic[]>;
  /** The run's refusals before authentication, by code. */
  authFailures(runId: string): Promise<Record<string, number>>;
  /** The run's newest admitted connections (MAX_RUNNER_CONNECTIONS), oldest first, with the build each runner reported. */
  runnerConnections(runId: string): Promise<RunnerConnection[]>;

  /** Stores a new API token (its digest only: the token itself is shown once and dropped). */
  insertApiToken(token: ApiTokenRow): Promise<Result<void>>;
  /** The token with this id, revoked or expired ones included (the caller judges them). */
  apiToken(tokenId: string): Promise<ApiTokenRow | undefined>;
  /** Every API token, oldest first. */
  apiTokens(): Promise<ApiTokenRow[]>;
  /** Marks a token revoked (`unknown_token` when there is none); revoking twice keeps the first time. */
  revokeApiToken(tokenId: string, nowMs: number): Promise<Result<ApiTokenRow>>;
  /**
   * Creates a run from a spec in ONE transaction: the run (as `registerRun`), its spec row and
   * its opening commands, so that nothing is half-created. When the run id is already stored
   * with a spec of the same `specDigest`, nothing changes and `created` is false (a retry
   * with the same Idempotency-Key); another digest, or a run without a spec, is refused with
   * `idempotency_key_reused` or `run_exists`.
   */
  createRun(request: CreateRunRequest): Promise<Result<{ created: boolean; run: RunSnapshot; spec: RunSpecRow }>>;
  /** The spec a run was created from through the API; undefined for runs registered otherwise. */
  runSpec(runId: string): Promise<RunSpecRow | undefined>;
  /** Runs, newest first, with their spec and cursor, filtered and paged (see RunQuery). */
  listRuns(query: RunQuery): Promise<RunListPage>;

  /**
   * Changes committed through another store instance on the same database (another authority
   * process): a command queued, a run revoked. The listener runs after their commit. Returns
   * the unsubscribe. A store that only one process can open (SQLite) never calls it.
   */
  subscribe(listener: (notice: StoreNotice) => void): () => void;

  /**
   * A mark that changes whenever another process committed to the store, or null when the store
   * cannot tell (every poll must then read). A poll that finds the mark unchanged skips its reads:
   * with thousands of idle runners, reading each run's cursor every poll is most of what an idle
   * authority does.
   */
  externalChangeMark(): Promise<number | null>;

  close(): Promise<void>;
}

/**
 * The store's aggregates, each implemented per database as one part over a shared connection
 * (sqlite/, postgres/): a new aggregate is a new part and a new slice here.
 */
export type RunsPart = Pick<AuthorityStore, "registerRun" | "run" | "runCursor" | "runIds" | "liveRunWork">;
export type CredentialsPart = Pick<
  AuthorityStore,
  "insertTicket" | "credential" | "reauthorize" | "revoke" | "renewLeases" | "prune"
>;
export type EventsPart = Pick<
  AuthorityStore,
  "committedEvent" | "committedWindow" | "countRedelivery" | "commitEvent" | "commitEvents" | "eventLog"
>;
export type CommandsPart = Pick<
  AuthorityStore,
  "command" | "commands" | "pendingCommandTimes" | "appendCommand" | "deliverNextCommand" | "recordCommandResult"
>;
export type DiagnosticsPart = Pick<
  AuthorityStore,
  "recordMalformedFrame" | "recordDiagnostic" | "recordAuthFailure" | "diagnostics" | "authFailures"
>;
export type ConnectionsPart = Pick<AuthorityStore, "runnerConnections">;
export type NoticesPart = Pick<AuthorityStore, "subscribe" | "externalChangeMark">;
export type ApiTokensPart = Pick<AuthorityStore, "insertApiToken" | "apiToken" | "apiTokens" | "revokeApiToken">;
export type RunSpecsPart = Pick<AuthorityStore, "createRun" | "runSpec" | "listRuns">;

/**
 * The open transaction of `commitEvent`, for the host's own rows: the caller's SQL runs on the
 * store's own connection, so it commits or rolls back with the cursor. Each store names its
 * driver handle rather than hiding it behind a query wrapper, because the SQL a host writes is
 * dialect-specific anyway (`?` against `$1`, synchronous against awaited). Valid only until
 * the callback returns (or its promise settles); never commit, roll back or release it.
 */
export type StoreTransaction =
  { kind: "sqlite"; db: BetterSqlite3.Database } | { kind: "postgres"; client: PoolClient };

/** One event of a group commit (`commitEvents`): the arguments of one `commitEvent`. */
export interface BatchedEvent {
  runId: string;
  connectionId: string;
  event: NewCommittedEvent;
  withinCommit?: WithinCommit;
}

export type WithinCommit = (transaction: StoreTransaction) => Promise<void> | void;

/**
 * `missed`: the store lost its notices for a while (a database restart), so any may have been
 * missed; a listener re-checks what it serves (the server re-offers each live run its next command).
 */
export type StoreNotice =
  | { kind: "command_queued"; runId: string }
  | { kind: "revoked"; runId: string; revocationEpoch: number }
  | { kind: "missed" };

export interface RunInit {
  /** The protocol version commands are built for until a lease pins one. */
  protocolVersion: number;
  nowMs: number;
}

/** One run's cursor and counters (§6.2). */
export interface RunSnapshot {
  identity: RunIdentity;
  /** The version of the most recent lease, or the registered default before any. */
  protocolVersion: number;
  ackedSourceSeq: number;
  /** The sourceSeq of the run's committed run.terminal; null before it. No event is committed after it. */
  terminalSourceSeq: number | null;
  connectionCount: number;
  /** `connection_<n>` of the one live runner connection; null before the first. */
  currentConnectionId: string | null;
  revocationEpoch: number;
  replayDeliveries: number;
  duplicateCommandResults: number;
  freshBootstraps: number;
  malformedFrames: number;
  lastLeaseId: string | null;
  lastLeaseExpiresAtUnixMs: number | null;
  commandCount: number;
  commandDeliveryCounts: Record<string, number>;
  /** When the run was registered. */
  createdAtUnixMs: number;
}

/** The part of a run that ingest needs for each event. */
export type RunCursor = Pick<
  RunSnapshot,
  "identity" | "ackedSourceSeq" | "terminalSourceSeq" | "currentConnectionId" | "revocationEpoch" | "protocolVersion"
>;

/** A live run as a full read sees it (`liveRunWork`). */
export interface LiveRunWork {
  runId: string;
  revocationEpoch: number;
  /**
   * The run's lowest command without a result has not been sent on its current connection:
   * `deliverNextCommand` would hand it out. False when every command has its result.
   */
  commandWaiting: boolean;
}

/** A ticket or lease as stored: a locator and a digest, never the token (§5.2). */
export interface CredentialRow {
  credentialId: string;
  runId: string;
  kind: CredentialKind;
  /** `sha256:<hex(authKey)>`, opened from its sealed form. */
  authKeyDigest: string;
  issuedAtUnixMs: number;
  expiresAtUnixMs: number;
  usedAtUnixMs: number | null;
  revokedAtUnixMs: number | null;
  /** null for a ticket. */
  leaseId: string | null;
  /** The run's epoch when issued; a ticket's is 0 in the challenge (§5.3 step 3). */
  revocationEpoch: number;
  /** The version a lease was issued under; null for a ticket. */
  protocolVersion: number | null;
}

export interface NewTicket {
  runId: string;
  credentialId: string;
  authKeyDigest: string;
  issuedAtUnixMs: number;
  expiresAtUnixMs: number;
}

/** A lease minted by the caller (token derived and dropped outside the store). */
export interface MintedLease {
  credentialId: string;
  authKeyDigest: string;
  leaseId: string;
  expiresAtUnixMs: number;
}

/**
 * §5.3 step 6, one transaction: the credential is re-read and must equal `expected` (what the
 * challenge was built from) and be unused, unrevoked and unexpired at `nowMs`; a lease must be
 * on `selectedVersion`. A bootstrap is marked used and `mint` stored as its lease (required
 * for a bootstrap, ignored for a lease). Then connectionCount goes up and `connection_<n>`
 * becomes the run's only current connection.
 */
export interface ReauthorizeRequest {
  expected: CredentialRow;
  selectedVersion: number;
  mint: MintedLease | null;
  nowMs: number;
  /** What the runner's hello said of its build, recorded with the connection. */
  runner?: RunnerBuild;
}

/** A runner's build as its hello reports it; `contractDigest` is null for a runner that sent none. */
export interface RunnerBuild {
  runnerVersion: string;
  runnerDigest: string;
  contractDigest: string | null;
}

/**
 * One connection the authority admitted (runtime.md §12.2: the runner's contract digest is
 * recorded per connection), written in the transaction that made it current. Connections
 * made without a hello (library callers) carry null build facts.
 */
export interface RunnerConnection {
  connectionId: string;
  connectedAt: number;
  protocolVersion: number;
  runnerVersion: string | null;
  runnerDigest: string | null;
  contractDigest: string | null;
}

export interface Reauthorized {
  connectionId: string;
  lease: CredentialRow;
  /** True when a bootstrap was consumed and `lease` is new. */
  freshBootstrap: boolean;
  ackedSourceSeq: number;
}

/**
 * §5.9 "Lease renewal", one transaction. The lease `leaseId` must be this run's, the lease of
 * its current connection `connectionId`, unrevoked, unexpired at `nowMs`, and issued under the
 * run's current revocation epoch, which the runner names. `observedExpiresAtUnixMs` is the
 * expiry the runner holds: equal to the stored expiry, the lease is extended to `nowMs + ttlMs`
 * (never shortened); equal to the expiry the last renewal replaced, it is a retry, and the
 * persisted extension is returned again with nothing changed. Anything else is refused.
 */
export interface RenewLeaseRequest {
  runId: string;
  connectionId: string;
  leaseId: string;
  observedExpiresAtUnixMs: number;
  revocationEpoch: number;
  ttlMs: number;
  nowMs: number;
}

/** The state of a lease that a renewal is decided on. */
export type RenewalLease = Pick<
  CredentialRow,
  "credentialId" | "expiresAtUnixMs" | "revokedAtUnixMs" | "revocationEpoch"
>;

export interface LeaseRenewal {
  /** The expiry the renewal replaced: what `lease_renewed` echoes. */
  previousExpiresAtUnixMs: number;
  expiresAtUnixMs: number;
  revocationEpoch: number;
  /** True when a retry got the persisted extension back. */
  replayed: boolean;
}

export interface Revocation {
  revocationEpoch: number;
  revokedCredentials: number;
}

/** A row of the committed window (§6.2); `envelope` is the event's canonical JSON. */
export interface CommittedEventRow {
  sourceSeq: number;
  sourceEventId: string;
  eventType: string;
  priority: number;
  envelope: string;
  deliveryCount: number;
  logicalEffectCount: 1;
}

export type NewCommittedEvent = Omit<CommittedEventRow, "deliveryCount" | "logicalEffectCount">;

/** A row of the run log: every committed event, kept. */
export interface LoggedEvent extends NewCommittedEvent {
  committedAtUnixMs: number;
}

export interface CommandRow {
  commandId: string;
  controllerSeq: number;
  type: string;
  /** The payload's canonical JSON: what an idempotent re-queue is compared with. */
  payload: string;
  /** The envelope's canonical JSON: the exact command every delivery sends. */
  envelope: string;
  queuedAtUnixMs: number;
  deliveryCount: number;
  lastDeliveredConnectionId: string | null;
  status: ResultStatus | null;
  /** Canonical JSON of `{commandId, status, result}`: what a repeated result must equal. */
  result: string | null;
}

export type NewCommand = Pick<CommandRow, "commandId" | "controllerSeq" | "type" | "payload" | "envelope">;

export interface NewCommandResult {
  commandId: string;
  status: ResultStatus;
  result: string;
}

export interface Diagnostic {
  code: string;
  message: string;
}

/** What an API token may do: each scope includes the ones before it. */
export type ApiScope = "read" | "operate" | "admin";

/** An API token as stored: a locator and a digest, never the token. */
export interface ApiTokenRow {
  /** `tok_<hex>`: the public part of the token, shown by `prp authority token list`. */
  tokenId: string;
  /** `sha256:<hex>` of the whole token. */
  digest: string;
  scope: ApiScope;
  /** A person's note of what the token is for ("" when none). */
  label: string;
  createdAtUnixMs: number;
  /** null: it never expires. */
  expiresAtUnixMs: number | null;
  revokedAtUnixMs: number | null;
}

/** What a run was created from (POST /v1/runs): the request as given, canonical JSON. */
export interface RunSpecRow {
  runId: string;
  /** The spec's canonical JSON. */
  spec: string;
  /** `sha256:<hex>` of the request that created it: a retry must carry the same. */
  specDigest: string;
  labels: Record<string, string>;
  priority: number;
  /** The token that created it, or null. */
  createdBy: string | null;
  createdAtUnixMs: number;
  /** The W3C traceparent of the request's span, when the authority traced it: its runner's parent span. */
  traceParent?: string;
}

export interface CreateRunRequest {
  identity: RunIdentity;
  init: RunInit;
  spec: Omit<RunSpecRow, "runId" | "createdAtUnixMs">;
  /** The opening commands, built for `init.protocolVersion` with controllerSeq 1, 2, … */
  commands: NewCommand[];
}

/**
 * `queued`: waiting for a worker; `claimed`: a worker (or a person) holds it, no event yet;
 * `pending`: no event committed yet (a run outside the queue); `running`: events, no terminal;
 * `ended`: run.terminal committed, or its dispatch ended (cancelled, lost, exited).
 */
export type RunState = "queued" | "claimed" | "pending" | "running" | "ended";

export interface RunQuery {
  state?: RunState;
  /** `key=value` pairs the run's labels must all hold. */
  labels?: Record<string, string>;
  /** A substring of the run id or of its spec (case-insensitive). */
  text?: string;
  /** The cursor of the page before (RunListPage.next). */
  after?: string;
  /** 1–500. */
  limit: number;
}

export interface RunListEntry {
  runId: string;
  state: RunState;
  protocolVersion: number;
  ackedSourceSeq: number;
  createdAtUnixMs: number;
  spec: RunSpecRow | null;
  /** Its place in the run queue; null for a run not created through the API. */
  dispatch: DispatchRow | null;
}

export interface RunListPage {
  runs: RunListEntry[];
  /** Pass as `after` for the next page; null on the last. */
  next: string | null;
}

/**
 * The run queue, its workers and admission caps (schema version 4): the store's dispatch part.
 */
export interface DispatchPart {
  /** Stores a new worker credential (its digest only). `worker_exists` when the name is taken. */
  insertWorker(worker: NewWorker): Promise<Result<WorkerRow>>;
  /** The worker with this id, revoked ones included (the caller judges them). */
  worker(workerId: string): Promise<WorkerRow | undefined>;
  /** Every worker, oldest first. */
  workers(): Promise<WorkerRow[]>;
  /**
   * Revokes a worker's credential and, in the same transaction, takes back its claims as a lost
   * worker's (see `sweepWorkers`). `unknown_worker` when there is none; twice keeps the first time.
   */
  revokeWorker(workerId: string, nowMs: number, maxAttempts: number): Promise<Result<WorkerRow>>;
  /**
   * One worker's poll, ONE transaction (see WorkerPoll): its heartbeat, the exits and releases it
   * reports, the claims it no longer holds taken back, and new claims up to what it asks, each
   * with a fresh bootstrap ticket from `mintTicket`. A retry of the same requestId claims nothing
   * new: it returns the claims that request made, with fresh tickets.
   */
  pollWorker(poll: WorkerPoll): Promise<Result<WorkerPollResult>>;
  /**
   * Takes back the claims of every worker silent for longer than `graceMs` (requeued, or ended
   * `worker_lost` past `maxAttempts`; a started run is never requeued), and ends the claims of
   * started runs whose runner is gone too (lease expired, no terminal). Returns what changed.
   */
  sweepWorkers(nowMs: number, graceMs: number, maxAttempts: number): Promise<DispatchRow[]>;
  /**
   * Cancels a run that no runner has claimed: `{cancelled: true}` and its dispatch ends
   * `cancelled`. A claimed run gives `{cancelled: false}` (the caller queues run.cancel for its
   * runner); an ended one `run_ended`; a run without a dispatch row `not_queued`.
   */
  cancelQueued(runId: string, nowMs: number): Promise<Result<{ cancelled: boolean; dispatch: DispatchRow }>>;
  /**
   * A ticket is about to be issued by hand (POST /v1/runs/{id}/tickets, `prp authority ticket`):
   * a queued run becomes claimed by nobody, so no worker starts it too. `run_claimed` when a
   * worker holds it, `run_ended` when its dispatch ended; a run without a dispatch row is fine.
   */
  claimByHand(runId: string, nowMs: number): Promise<Result<DispatchRow | null>>;
  /** The dispatch rows of these runs (those that have one). */
  dispatch(runIds: readonly string[]): Promise<DispatchRow[]>;
  /** Every queued run in claim order (priority, then submit time), at most `limit`. */
  queuedRuns(limit: number): Promise<DispatchRow[]>;
  /** Sets (max ≥ 0) or removes (null) an admission cap. */
  setCap(scope: string, max: number | null): Promise<Result<void>>;
  /** Every cap with how many runs hold a slot of it now. */
  caps(): Promise<CapUsage[]>;
}

/**
 * Where an API-created run is in the queue (schema version 4). `queued`: waiting for a worker;
 * `claimed`: a worker (or a person, workerId null) holds it; `ended`: the dispatch is over —
 * its runner exited, it was cancelled while queued, or its worker was lost too often. Whether a
 * claimed run is running or ended by its own terminal is the run's cursor's to say.
 */
export type DispatchState = "queued" | "claimed" | "ended";

export interface DispatchRow {
  runId: string;
  state: DispatchState;
  priority: number;
  labels: Record<string, string>;
  /** When the run was submitted: with priority, the claim order. Kept when requeued. */
  queuedAtUnixMs: number;
  /** Claims so far (the current one included). */
  attempts: number;
  /** The claiming worker; null when queued, ended, or claimed by hand. */
  workerId: string | null;
  claimRequestId: string | null;
  /** Taken inside the claim's transaction after its cap checks (an exact record for the caps). */
  claimedAtUnixMs: number | null;
  endedAtUnixMs: number | null;
  /** null: the runner's own terminal ended it; else `cancelled`, `worker_lost` or `runner_exited`. */
  endReason: string | null;
  /** For a person: what happened ("exit 3 before the run's terminal"). */
  endDetail: string | null;
}

export interface NewWorker {
  /** `wkr_<16 hex>`. */
  workerId: string;
  /** A person's name for it, unique. */
  name: string;
  /** `sha256:<hex>` of the whole credential. */
  digest: string;
  createdAtUnixMs: number;
}

export interface WorkerRow extends NewWorker {
  revokedAtUnixMs: number | null;
  /** As the worker's last poll said; {} and 0 before its first. */
  labels: Record<string, string>;
  /** The agent profiles its last poll advertised: it holds `agent=<name>` for each; [] before its first. */
  agents: string[];
  maxRuns: number;
  draining: boolean;
  /** The authority's clock at its last poll; null before the first. */
  lastSeenAtUnixMs: number | null;
  /** Claims it holds now (dispatch rows claimed by it). */
  activeRuns: number;
}

export interface WorkerPoll {
  workerId: string;
  /** The worker's id for this poll: a retry carries the same. */
  requestId: string;
  labels: Record<string, string>;
  /** The agent profiles it can run now: it holds `agent=<name>` for each (none when omitted). */
  agents?: readonly string[];
  maxRuns: number;
  draining: boolean;
  /** The runs whose runner it is running now. A claim of its not in this list (and not of this request) is taken back. */
  held: readonly string[];
  /** How many new runs it would start now. */
  want: number;
  /** Runners that exited since its last poll. */
  exited: ReadonlyArray<{ runId: string; exitCode: number | null; signal: string | null }>;
  /** Claims it gives back unstarted (a drain timeout): requeued without counting an attempt. */
  released: readonly string[];
  nowMs: number;
  maxAttempts: number;
  /** Builds the bootstrap ticket of a run the poll hands out, inside its transaction. */
  mintTicket: (runId: string, nowMs: number) => NewTicket;
}

export interface WorkerPollResult {
  worker: WorkerRow;
  /** The claims this poll hands out (new, or a retry's again), each with the ticket `mintTicket` built. */
  claims: Array<{
    dispatch: DispatchRow;
    identity: RunIdentity;
    spec: RunSpecRow;
    protocolVersion: number;
    credentialId: string;
  }>;
  /** Runs in `held` that are no longer this worker's (taken back while it was silent, cancelled): stop their runners. */
  lost: string[];
  /** The claims this poll made (not a retry's again): what the queue-wait metric counts, once each. */
  claimedNow: string[];
}

/** An admission cap: `*` (every claimed run) or `key=value` (claimed runs with that label). */
export interface CapUsage {
  scope: string;
  max: number;
  /** Claimed runs holding a slot now. */
  active: number;
}
