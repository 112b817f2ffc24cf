import { fail, ok, type Result } from "../errors.js";
import { checkIdentity, identityDifference, type RunIdentity } from "../identity.js";
import { liveRunWorkQuery } from "../live-run-work-query.js";
import { cursorFrom, identityFrom, liveRunWorkFrom, type Row } from "../store-rows.js";
import type { LiveRunWork, RunCursor, RunInit, RunSnapshot, RunsPart } from "../store.js";
import type { SqliteHandle } from "./handle.js";

/** Runs: registered once by identity, found again after a restart. */
export class SqliteRuns implements RunsPart {
  constructor(private readonly h: SqliteHandle) {}

  async registerRun(identity: RunIdentity, init: RunInit): Promise<Result<RunSnapshot>> {
    const checked = checkIdentity(identity);
    if (!checked.ok) return checked;
    const id = checked.value;
    return this.h.write(() => {
      const existing = this.h.runRow(id.runId);
      if (existing) {
        const differs = identityDifference(identityFrom(existing), id);
        if (differs)
          return fail("run_identity_mismatch", `/${differs}`, `run ${id.runId} is stored with another ${differs}`);
        return ok(this.h.snapshot(existing));
      }
      this.h.insertRun(id, init);
      return ok(this.h.snapshot(this.h.runRow(id.runId)!));
    });
  }

  run(runId: string): Promise<RunSnapshot | undefined> {
    return this.h.read(() => {
      const r = this.h.runRow(runId);
      return r ? this.h.snapshot(r) : undefined;
    });
  }

  runCursor(runId: string): Promise<RunCursor | undefined> {
    return this.h.read(() => {
      const r = this.h.runRow(runId);
      return r ? cursorFrom(r, this.h.terminalSourceSeq(runId)) : undefined;
    });
  }

  runIds(): Promise<string[]> {
    return this.h.read(() =>
      (this.h.sql("SELECT run_id FROM runs ORDER BY run_id").all() as Array<{ run_id: string }>).map((r) => r.run_id),
    );
  }

  liveRunWork(runIds: readonly string[]): Promise<LiveRunWork[]> {
    return this.h.read(() =>
      (this.h.sql(liveRunWorkQuery("SELECT value FROM json_each(?)")).all(JSON.stringify(runIds)) as Row[]).map(
        liveRunWorkFrom,
      ),
    );
  }
}
