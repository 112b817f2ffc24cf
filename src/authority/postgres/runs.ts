import { fail, ok, type Result } from "../errors.js";
import { checkIdentity, identityDifference, type RunIdentity } from "../identity.js";
import { liveRunWorkQuery } from "../live-run-work-query.js";
import { cursorFrom, identityFrom, liveRunWorkFrom } from "../store-rows.js";
import type { LiveRunWork, RunCursor, RunInit, RunSnapshot, RunsPart } from "../store.js";
import type { PostgresHandle } from "./handle.js";

/** Runs: registered once by identity, found again after a restart. */
export class PostgresRuns implements RunsPart {
  constructor(private readonly h: PostgresHandle) {}

  async registerRun(identity: RunIdentity, init: RunInit): Promise<Result<RunSnapshot>> {
    const checked = checkIdentity(identity);
    if (!checked.ok) return checked;
    const id = checked.value;
    return this.h.transaction(async (c) => {
      await this.h.insertRun(c, id, init);
      const run = (await this.h.lockRun(c, id.runId))!;
      const differs = identityDifference(identityFrom(run), id);
      if (differs)
        return fail("run_identity_mismatch", `/${differs}`, `run ${id.runId} is stored with another ${differs}`);
      return ok(await this.h.snapshot(c, run));
    });
  }

  async run(runId: string): Promise<RunSnapshot | undefined> {
    const [r] = await this.h.query("SELECT * FROM runs WHERE run_id = $1", [runId]);
    return r ? this.h.snapshot(this.h.pool, r) : undefined;
  }

  async runCursor(runId: string): Promise<RunCursor | undefined> {
    const [r] = await this.h.query(
      "SELECT r.*, (SELECT MIN(source_seq) FROM committed_events e WHERE e.run_id = r.run_id AND e.event_type = 'run.terminal') AS terminal_seq FROM runs r WHERE r.run_id = $1",
      [runId],
    );
    return r ? cursorFrom(r, r.terminal_seq as number | null) : undefined;
  }

  async runIds(): Promise<string[]> {
    return (await this.h.query('SELECT run_id FROM runs ORDER BY run_id COLLATE "C"')).map((r) => r.run_id as string);
  }

  async liveRunWork(runIds: readonly string[]): Promise<LiveRunWork[]> {
    return (await this.h.query(liveRunWorkQuery("SELECT unnest($1::text[])"), [runIds])).map(liveRunWorkFrom);
  }
}
