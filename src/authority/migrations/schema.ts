import { STORE_SCHEMA } from "../limits.js";

/**
 * The authority store's schema, once per dialect, as the migrations write it (list.ts). Each
 * version's text is frozen once released: a change is a new version. SQLite tables are STRICT;
 * PostgreSQL's times and counters are BIGINT. The SQLite store also keeps its format's name in
 * `meta` (the marker stores before recorded versions carried).
 */
export const SQLITE_V1 = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY,
  runner_instance_id TEXT NOT NULL, environment_lease_id TEXT NOT NULL, normalized_session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL, item_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  acked_source_seq INTEGER NOT NULL DEFAULT 0,
  connection_count INTEGER NOT NULL DEFAULT 0,
  current_connection_id TEXT,
  revocation_epoch INTEGER NOT NULL DEFAULT 0,
  replay_deliveries INTEGER NOT NULL DEFAULT 0,
  duplicate_command_results INTEGER NOT NULL DEFAULT 0,
  fresh_bootstraps INTEGER NOT NULL DEFAULT 0,
  malformed_frames INTEGER NOT NULL DEFAULT 0,
  last_lease_id TEXT,
  last_lease_expires_at INTEGER,
  created_at INTEGER NOT NULL) STRICT;
CREATE TABLE credentials (
  credential_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('bootstrap', 'lease')),
  auth_key_digest TEXT NOT NULL, -- sealed:v1:…, the auth key sealed under the server key (sealed-credential.ts)
  issued_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
  used_at INTEGER, revoked_at INTEGER,
  lease_id TEXT UNIQUE,
  revocation_epoch INTEGER NOT NULL,
  protocol_version INTEGER) STRICT;
CREATE INDEX credentials_by_run ON credentials (run_id);
CREATE TABLE lease_renewals (
  credential_id TEXT PRIMARY KEY REFERENCES credentials (credential_id) ON DELETE CASCADE,
  previous_expires_at INTEGER NOT NULL,
  renewals INTEGER NOT NULL,
  renewed_at INTEGER NOT NULL) STRICT;
CREATE TABLE commands (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  controller_seq INTEGER NOT NULL, command_id TEXT NOT NULL, command_type TEXT NOT NULL,
  payload TEXT NOT NULL, envelope TEXT NOT NULL, queued_at INTEGER NOT NULL,
  delivery_count INTEGER NOT NULL DEFAULT 0, last_delivered_connection_id TEXT, last_delivered_at INTEGER,
  status TEXT, result TEXT, result_at INTEGER,
  PRIMARY KEY (run_id, controller_seq), UNIQUE (run_id, command_id)) STRICT;
CREATE TABLE committed_events (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  source_seq INTEGER NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  priority INTEGER NOT NULL, envelope TEXT NOT NULL, delivery_count INTEGER NOT NULL, committed_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, source_seq), UNIQUE (run_id, source_event_id)) STRICT;
CREATE TABLE event_log (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  source_seq INTEGER NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  priority INTEGER NOT NULL, envelope TEXT NOT NULL, committed_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, source_seq)) STRICT;
CREATE TABLE diagnostics (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  code TEXT NOT NULL, message TEXT NOT NULL, at INTEGER NOT NULL) STRICT;
CREATE INDEX diagnostics_by_run ON diagnostics (run_id, id);
CREATE TABLE auth_failures (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  code TEXT NOT NULL,
  count INTEGER NOT NULL,
  first_id INTEGER NOT NULL, latest_id INTEGER NOT NULL,
  PRIMARY KEY (run_id, code)) STRICT;
INSERT INTO meta (key, value) VALUES ('schema', '${STORE_SCHEMA}');
`;

export const SQLITE_V2 = `
CREATE TABLE runner_connections (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  connection_number INTEGER NOT NULL,
  connected_at INTEGER NOT NULL,
  protocol_version INTEGER NOT NULL,
  runner_version TEXT, runner_digest TEXT, contract_digest TEXT,
  PRIMARY KEY (run_id, connection_number)) STRICT;
`;

export const POSTGRES_V1 = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY,
  runner_instance_id TEXT NOT NULL, environment_lease_id TEXT NOT NULL, normalized_session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL, item_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  acked_source_seq BIGINT NOT NULL DEFAULT 0,
  connection_count BIGINT NOT NULL DEFAULT 0,
  current_connection_id TEXT,
  revocation_epoch BIGINT NOT NULL DEFAULT 0,
  replay_deliveries BIGINT NOT NULL DEFAULT 0,
  duplicate_command_results BIGINT NOT NULL DEFAULT 0,
  fresh_bootstraps BIGINT NOT NULL DEFAULT 0,
  malformed_frames BIGINT NOT NULL DEFAULT 0,
  last_lease_id TEXT,
  last_lease_expires_at BIGINT,
  created_at BIGINT NOT NULL);
CREATE TABLE credentials (
  credential_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('bootstrap', 'lease')),
  auth_key_digest TEXT NOT NULL,
  issued_at BIGINT NOT NULL, expires_at BIGINT NOT NULL,
  used_at BIGINT, revoked_at BIGINT,
  lease_id TEXT UNIQUE,
  revocation_epoch BIGINT NOT NULL,
  protocol_version INTEGER);
CREATE INDEX credentials_by_run ON credentials (run_id);
CREATE TABLE lease_renewals (
  credential_id TEXT PRIMARY KEY REFERENCES credentials (credential_id) ON DELETE CASCADE,
  previous_expires_at BIGINT NOT NULL,
  renewals BIGINT NOT NULL,
  renewed_at BIGINT NOT NULL);
CREATE TABLE commands (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  controller_seq INTEGER NOT NULL, command_id TEXT NOT NULL, command_type TEXT NOT NULL,
  payload TEXT NOT NULL, envelope TEXT NOT NULL, queued_at BIGINT NOT NULL,
  delivery_count BIGINT NOT NULL DEFAULT 0, last_delivered_connection_id TEXT, last_delivered_at BIGINT,
  status TEXT, result TEXT, result_at BIGINT,
  PRIMARY KEY (run_id, controller_seq), UNIQUE (run_id, command_id));
CREATE TABLE committed_events (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  source_seq BIGINT NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  priority INTEGER NOT NULL, envelope TEXT NOT NULL, delivery_count BIGINT NOT NULL, committed_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, source_seq), UNIQUE (run_id, source_event_id));
CREATE TABLE event_log (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  source_seq BIGINT NOT NULL, source_event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  priority INTEGER NOT NULL, envelope TEXT NOT NULL, committed_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, source_seq));
CREATE TABLE diagnostics (
  id BIGSERIAL PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  code TEXT NOT NULL, message TEXT NOT NULL, at BIGINT NOT NULL);
CREATE INDEX diagnostics_by_run ON diagnostics (run_id, id);
CREATE TABLE auth_failures (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  code TEXT NOT NULL,
  count BIGINT NOT NULL,
  first_id BIGINT NOT NULL, latest_id BIGINT NOT NULL,
  PRIMARY KEY (run_id, code));
`;

export const POSTGRES_V2 = `
CREATE TABLE runner_connections (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  connection_number BIGINT NOT NULL,
  connected_at BIGINT NOT NULL,
  protocol_version INTEGER NOT NULL,
  runner_version TEXT, runner_digest TEXT, contract_digest TEXT,
  PRIMARY KEY (run_id, connection_number));
`;

/** Version 3, the HTTP API's: its bearer tokens (digests only), and what each run was created from. */
const apiTables = (integer: string) => `
CREATE TABLE api_tokens (
  token_id TEXT PRIMARY KEY,
  digest TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('read', 'operate', 'admin')),
  label TEXT NOT NULL,
  created_at ${integer} NOT NULL, expires_at ${integer}, revoked_at ${integer})`;

export const SQLITE_V3 = `
${apiTables("INTEGER")} STRICT;
CREATE TABLE run_specs (
  run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
  spec TEXT NOT NULL, spec_digest TEXT NOT NULL, labels TEXT NOT NULL,
  priority INTEGER NOT NULL, created_by TEXT, created_at INTEGER NOT NULL) STRICT;
CREATE TABLE run_labels (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)) STRICT;
CREATE INDEX run_labels_by_value ON run_labels (key, value);
CREATE INDEX runs_by_created ON runs (created_at, run_id);
`;

export const POSTGRES_V3 = `
${apiTables("BIGINT")};
CREATE TABLE run_specs (
  run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
  spec TEXT NOT NULL, spec_digest TEXT NOT NULL, labels TEXT NOT NULL,
  priority INTEGER NOT NULL, created_by TEXT, created_at BIGINT NOT NULL);
CREATE TABLE run_labels (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (run_id, key));
CREATE INDEX run_labels_by_value ON run_labels (key, value);
CREATE INDEX runs_by_created ON runs (created_at, run_id COLLATE "C");
`;

/**
 * Version 4, the run queue (issue 28): workers and their credentials (digests only), each
 * API-created run's place in the queue, and admission caps. `dispatch` is the claim order's
 * index; a run's labels stay in run_labels.
 */
const workersTable = (integer: string, bool: string) => `
CREATE TABLE workers (
  worker_id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  digest TEXT NOT NULL,
  created_at ${integer} NOT NULL, revoked_at ${integer},
  labels TEXT NOT NULL DEFAULT '{}',
  max_runs INTEGER NOT NULL DEFAULT 0,
  draining ${bool} NOT NULL DEFAULT ${bool === "BOOLEAN" ? "FALSE" : "0"},
  last_seen_at ${integer})
`;

const dispatchTable = (integer: string) => `
CREATE TABLE dispatch (
  run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
  state TEXT NOT NULL CHECK (state IN ('queued', 'claimed', 'ended')),
  priority INTEGER NOT NULL,
  queued_at ${integer} NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT,
  claim_request_id TEXT,
  claimed_at ${integer}, ended_at ${integer},
  end_reason TEXT, end_detail TEXT)
`;

const capsTable = `
CREATE TABLE admission_caps (
  scope TEXT PRIMARY KEY,
  max INTEGER NOT NULL CHECK (max >= 0))
`;

export const SQLITE_V4 = `
${workersTable("INTEGER", "INTEGER")} STRICT;
${dispatchTable("INTEGER")} STRICT;
CREATE INDEX dispatch_claim_order ON dispatch (state, priority DESC, queued_at, run_id);
CREATE INDEX dispatch_by_worker ON dispatch (worker_id);
${capsTable} STRICT;
`;

export const POSTGRES_V4 = `
${workersTable("BIGINT", "BOOLEAN")};
${dispatchTable("BIGINT")};
CREATE INDEX dispatch_claim_order ON dispatch (state, priority DESC, queued_at, run_id);
CREATE INDEX dispatch_by_worker ON dispatch (worker_id);
${capsTable};
`;

/**
 * Version 5, named agents (issue 29): the agent profiles each worker's last poll advertised, a
 * JSON array of names. A label holds one value, and a worker may run several agents.
 */
const workerAgents = "ALTER TABLE workers ADD COLUMN agents TEXT NOT NULL DEFAULT '[]';";

export const SQLITE_V5 = workerAgents;

export const POSTGRES_V5 = workerAgents;

/** The W3C traceparent of the API request that created a run, for the runner a worker starts (docs/deployment.md "Traces"). */
const runTraceParent = `ALTER TABLE run_specs ADD COLUMN trace_parent TEXT;`;

export const SQLITE_V6 = runTraceParent;

export const POSTGRES_V6 = runTraceParent;

/**
 * Version 7, the command gauges: the unanswered commands of every run in the order they were
 * queued, so a scrape reads the oldest of them without a scan of every command ever queued.
 */
const pendingCommandsIndex = "CREATE INDEX commands_pending ON commands (queued_at) WHERE status IS NULL;";

export const SQLITE_V7 = pendingCommandsIndex;

export const POSTGRES_V7 = pendingCommandsIndex;
