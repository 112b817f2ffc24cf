import type { AdmissionOptions } from "../transport/admission.js";
import type { HeartbeatOptions } from "../transport/index.js";
import type { TlsIdentity } from "../transport/upgrade-server.js";
import type { AuthorityHooks } from "./authority-hooks.js";
import type { AuthorityObserver } from "./authority-observer.js";
import type { OnCredentialsUpdated } from "./credentials-updated.js";
import type { OnCommittedEvent } from "./ingest.js";
import type { RunnerContractOptions } from "./runner-contract.js";
import type { ServerKey } from "./server-key.js";
import type { AuthorityStore } from "./store.js";

/**
 * The authority's store: one the caller opened (SQLite or PostgreSQL) and closes after the
 * server's `close`, or a SQLite store under `stateDir` that the server opens and closes itself.
 */
export type AuthorityServerOptions = AuthorityServerSettings & ({ store: AuthorityStore } | SqliteStateDir);

export interface SqliteStateDir {
  stateDir: string;
  /** Seals the stored ticket and lease keys; kept outside `stateDir` (server-key-source.ts). */
  serverKey: ServerKey;
  /** See SqliteStoreOptions.adoptServerKey: for a key change, once. */
  adoptServerKey?: boolean;
}

export interface AuthorityServerSettings {
  /** The runner build every run expects (§5.3 step 2). */
  runnerVersion: string;
  runnerDigest: string;
  /**
   * Which runner contracts are accepted at the handshake (runner-contract.ts). Without it every
   * runner is (`any`); `prp authority serve` and `prp demo` default to `equal`.
   */
  runnerContract?: RunnerContractOptions;
  /** The caller's durable commit: the authority acknowledges an event only after it returns. */
  onCommittedEvent?: OnCommittedEvent;
  /**
   * Told after each store transaction that committed events, with their runs: a notice for
   * readers of the store (the HTTP API's event streams), not part of the commit. Unlike
   * onCommittedEvent it adds no work inside the transaction, and no event waits for it.
   */
  afterCommit?: (runIds: ReadonlySet<string>) => void;
  /** The host's reaction to auth.credentials.updated, awaited in the same commit before the ACK (credentials-updated.ts). */
  onCredentialsUpdated?: OnCredentialsUpdated;
  leaseTtlMs?: number;
  /**
   * How long a lease renewal waits for others to share its store commit (default 1 s, at most
   * 5 s; a renewal whose lease is nearly out waits less). Longer costs fewer commits a second
   * with thousands of runners; 0 commits each at once.
   */
  renewalWindowMs?: number;
  /** The authority's clock (expiry of tickets and leases); tests and the lease-expiry fault move it. */
  now?: () => number;
  /**
   * The heartbeat interval each welcome carries: the authority sends a WebSocket ping on every
   * quiet connection this often and the runner's socket answers (default HEARTBEAT_INTERVAL_MS,
   * bounds in src/transport/limits.ts).
   */
  heartbeatIntervalMs?: number;
  /** Dead-runner detection on each connection: its timeout, and its own timers (not `now`). */
  heartbeat?: HeartbeatOptions;
  /** Diagnostics for a person, with the run they concern; never a secret. */
  log?: (text: string, fields?: LogFields) => void;
  /** Serve TLS (wss://) with this certificate chain and key, PEM; without it, ws:// on loopback only. */
  tls?: TlsIdentity;
  /** Admission of connections before they authenticate (defaults in src/transport/limits.ts). */
  connections?: ConnectionLimits;
  /** Test points (authority-hooks.ts: the fault framework's lost ACKs and stray commands); none in production. */
  hooks?: AuthorityHooks;
  /** The operator's instruments (Prometheus metrics); none without them. */
  observer?: AuthorityObserver;
}

export interface LogFields {
  /** A short name of what happened, e.g. `runner.connected`. */
  event?: string;
  runId?: string;
  connectionId?: string;
  /** The contract digest a connected runner reported. */
  contractDigest?: string;
}

export interface ConnectionLimits extends AdmissionOptions {
  /** The upgrade request must be whole within this; Node answers 408 past it. */
  headersTimeoutMs?: number;
}
