import type { ApiStore, ApiWrites } from "../api/context.js";
import type { SnapshotOrigin } from "../reducer/snapshot.js";

/**
 * Where the console's runs come from: the authority's store (live runs, commands) or a replayed
 * file (one run, read-only). Either is served to the page through the public API's routes
 * (src/api): the store they read, where writes go (or why they are refused), and what a run's
 * reduced session starts from.
 */
export interface RunSource {
  /** Whether commands can be sent (false for a replayed file). */
  readonly live: boolean;
  readonly store: ApiStore;
  readonly writes: ApiWrites;
  /** What the reducer starts from: a fixture's name, identity and capabilities, else nothing. */
  origin(runId: string): SnapshotOrigin;
  close(): Promise<void>;
}
