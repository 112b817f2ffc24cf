import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { STATE_FILE } from "./runner-state.js";

/**
 * Reads the runner state in `stateDir` read-only, from a process beside the runner (its worker,
 * a health endpoint): the state file is the one record of a runner's outbox and journal that
 * another process can see. "absent" without a state file; "unreadable" when it cannot be read
 * within `timeoutMs` (a runner mid-write holds it) or is not a runner state. Each caller decides
 * what those mean for it.
 */
export function peekRunnerState<T>(
  stateDir: string,
  timeoutMs: number,
  read: (db: Database.Database) => T,
): T | "absent" | "unreadable" {
  const path = join(stateDir, STATE_FILE);
  if (!existsSync(path)) return "absent";
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: timeoutMs });
    return read(db);
  } catch {
    return "unreadable";
  } finally {
    db?.close();
  }
}
