import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { STATE_FILE } from "../runner/durable/runner-state.js";

/**
 * Whether the runner whose state is in `stateDir` has emitted nothing yet: no event numbered
 * (next_source_seq still 1) and no command journaled. Then the authority cannot have committed
 * an event of it nor a command's result, so its run has not started, whatever the API says or
 * whether this worker may ask it. No state file: the runner never got that far. Any doubt (a
 * state it cannot read) is `false`: a runner is killed only when it surely did nothing.
 */
export function runnerEmittedNothing(stateDir: string): boolean {
  const path = join(stateDir, STATE_FILE);
  if (!existsSync(path)) return true;
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: 1000 });
    const state = db.prepare("SELECT next_source_seq AS next FROM runner_state WHERE id = 1").get() as
      { next: number } | undefined;
    const commands = db.prepare("SELECT COUNT(*) AS n FROM processed_commands").get() as { n: number };
    return (state === undefined || state.next === 1) && commands.n === 0;
  } catch {
    return false;
  } finally {
    db?.close();
  }
}
