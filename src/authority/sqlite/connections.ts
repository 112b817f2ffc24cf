import { runnerConnectionFrom, type Row } from "../store-rows.js";
import type { ConnectionsPart, NoticesPart, RunnerConnection } from "../store.js";
import type { SqliteHandle } from "./handle.js";

/** The runner connections a run admitted, and change notices (none: one process serves a SQLite store). */
export class SqliteConnections implements ConnectionsPart, NoticesPart {
  constructor(private readonly h: SqliteHandle) {}

  runnerConnections(runId: string): Promise<RunnerConnection[]> {
    return this.h.read(() =>
      (
        this.h.sql("SELECT * FROM runner_connections WHERE run_id = ? ORDER BY connection_number").all(runId) as Row[]
      ).map(runnerConnectionFrom),
    );
  }

  /** One authority process serves a SQLite store: no other instance commits to it. */
  subscribe(): () => void {
    return () => undefined;
  }

  /** SQLite's data_version: it moves only when another connection (an admin process) commits. */
  externalChangeMark(): Promise<number | null> {
    return this.h.read(() => this.h.sql("PRAGMA data_version").pluck().get() as number);
  }
}
