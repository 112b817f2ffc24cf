import { peekRunnerState } from "../runner/durable/runner-state-peek.js";

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
 * What the runner state in `stateDir` says, read beside the runner (runner-state-peek.ts). Null
 * when there is no state yet or it cannot be read (a runner mid-write holds it; the next scrape
 * reads it).
 */
export function readRunnerFigures(stateDir: string): RunnerFigures | null {
  const figures = peekRunnerState(stateDir, 200, (db): RunnerFigures | null => {
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
  });
  return figures === "absent" || figures === "unreadable" ? null : figures;
}
