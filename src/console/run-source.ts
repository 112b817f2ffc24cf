import type { PrpEvent } from "../contract/kinds.js";
import type { SnapshotOrigin } from "../reducer/snapshot.js";
import type { ApiResult, CommandReceipt } from "./api-types.js";

/**
 * Where the console's runs come from: the authority's store (live runs, commands) or a replayed
 * file (one run, read-only). Positions are 1-based, in the run's delivery order; for a run in
 * the store they are its sourceSeqs.
 */
export interface RunSource {
  /** Whether commands can be sent (false for a replayed file). */
  readonly live: boolean;
  runIds(): Promise<string[]>;
  /** The run's events after position `after`, in order, at most `limit`; undefined for a run it does not hold. */
  eventsAfter(runId: string, after: number, limit: number): Promise<PrpEvent[] | undefined>;
  /** What the reducer starts from: a fixture's name, identity and capabilities, else nothing. */
  origin(runId: string): SnapshotOrigin;
  commands(runId: string): Promise<CommandReceipt[]>;
  /** Queues a command through the authority's command queue (and so the contract codec). */
  queue(runId: string, type: string, payload: Record<string, unknown>): Promise<ApiResult<CommandReceipt>>;
  close(): Promise<void>;
}
