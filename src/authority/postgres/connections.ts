import { runnerConnectionFrom } from "../store-rows.js";
import type { ConnectionsPart, RunnerConnection } from "../store.js";
import type { PostgresHandle } from "./handle.js";

/** The runner connections a run admitted, newest MAX_RUNNER_CONNECTIONS. */
export class PostgresConnections implements ConnectionsPart {
  constructor(private readonly h: PostgresHandle) {}

  async runnerConnections(runId: string): Promise<RunnerConnection[]> {
    return (
      await this.h.query("SELECT * FROM runner_connections WHERE run_id = $1 ORDER BY connection_number", [runId])
    ).map(runnerConnectionFrom);
  }
}
