import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { STATE_FILE } from "../runner/durable/runner-state.js";

/** What a runner's durable state says of its delivery, read by the worker or runnerd for /metrics. */
export interface RunnerFigures {
  /** Events in the outbox, not yet acknowledged. */
  outboxEvents: number;
  outboxBytes: number;
  /** Times the runner redialled the authority. */
  reconnects: number;
  /** Events the runner numbered (emitted to its outbox) so far. */
  eventsEmitted: number;
}

/**
 * Reads the runner state in `stateDir` read-only, as runner-progress.ts does: the state file is
 * the one record of a runner's outbox that a process beside it can see. Null when there is no
 * state yet or it cannot be read (a runner mid-write holds it; the next scrape reads it).
 */
export function readRunnerFigures(stateDir: string): RunnerFigures | null {
  const path = join(stateDir, STATE_FILE);
  if (!existsSync(path)) return null;
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: 200 });
    const state = db
      .prepare(
        "SELECT next_source_seq AS next, outbox_bytes AS bytes, reconnect_count AS reconnects FROM runner_state WHERE id = 1",
      )
      .get() as { next: number; bytes: number; reconnects: number } | undefined;
    const outbox = db.prepare("SELECT COUNT(*) AS n FROM outbox").get() as { n: number };
    if (!state) return null;
    return {
      outboxEvents: outbox.n,
      outboxBytes: state.bytes,
      reconnects: state.reconnects,
      eventsEmitted: state.next - 1,
    };
  } catch {
    return null;
  } finally {
    db?.close();
  }
}
