import { MAX_FRAME_BYTES } from "../contract/versions.js";

/** The authority's numbers (runtime.md §5.8, §5.9, §6.2, §15.3), each named once. */

export const STORE_SCHEMA = "paperclip.runner.durable.control-plane-state.v1";
export const STORE_FILE = "control-plane-state.sqlite";
/** The SQLite main file is refused at open, and growth refused at run time, past this. */
export const MAX_STORE_BYTES = 192 * 1024 * 1024;

/** Commands per run, ever: controllerSeq is position + 1, so none is deleted while the run lives. */
export const MAX_COMMANDS = 500;
/**
 * One command envelope, as canonical JSON. The 4 KiB below the 1 MiB frame leave room for the
 * sealed `command` control envelope around it (identity, connection and lease ids, sentAt).
 */
export const MAX_COMMAND_BYTES = MAX_FRAME_BYTES - 4 * 1024;
/** The committed-event window: duplicates of these are recognised; older ones are stale. */
export const COMMITTED_WINDOW = 64;
/** Diagnostics kept per run, newest first out of the window last. */
export const MAX_DIAGNOSTICS = 32;
/** The runner connections recorded per run: the newest ones. */
export const MAX_RUNNER_CONNECTIONS = 32;
export const MAX_DIAGNOSTIC_MESSAGE = 1024;
export const MAX_DIAGNOSTIC_CODE = 160;

/** Bootstrap tickets (§5.9): short and single use. */
export const DEFAULT_BOOTSTRAP_TTL_MS = 5_000;
export const MIN_BOOTSTRAP_TTL_MS = 1_000;
export const MAX_BOOTSTRAP_TTL_MS = 60_000;
/** Connection leases (§5.9): the TTL is also the longest a revoke that cannot be delivered takes. */
export const DEFAULT_LEASE_TTL_MS = 60_000;
export const MIN_LEASE_TTL_MS = 60_000;
export const MAX_LEASE_TTL_MS = 24 * 60 * 60 * 1000;

/** The statuses a durable command result may carry (§5.8, wire.md O9); each is terminal. */
export const RESULT_STATUSES = ["completed", "failed", "rejected", "indeterminate"] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];
