import { peekRunnerState } from "../runner/durable/runner-state-peek.js";

/**
 * Whether the runner whose state is in `stateDir` has emitted nothing yet: no event numbered
 * (next_source_seq still 1) and no command journaled. Then the authority cannot have committed
 * an event of it nor a command's result, so its run has not started, whatever the API says or
 * whether this worker may ask it. No state file: the runner never got that far. Any doubt (a
 * state it cannot read) is `false`: a runner is killed only when it surely did nothing.
 */
export function runnerEmittedNothing(stateDir: string): boolean {
  const nothing = peekRunnerState(stateDir, 1000, (db) => {
    const state = db.prepare("SELECT next_source_seq AS next FROM runner_state WHERE id = 1").get() as
      { next: number } | undefined;
    const commands = db.prepare("SELECT COUNT(*) AS n FROM processed_commands").get() as { n: number };
    return (state === undefined || state.next === 1) && commands.n === 0;
  });
  return nothing === "absent" || nothing === true;
}
