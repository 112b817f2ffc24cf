import { ok, type Result } from "../errors.js";
import { checkIdentity } from "../identity.js";
import { checkRunQuery, runListPage, runListQuery } from "../run-list-query.js";
import { runSpecFrom, type Row } from "../store-rows.js";
import { existingRunRefusal, openingCommandsRefusal } from "../store-rules.js";
import type { CreateRunRequest, RunListPage, RunQuery, RunSnapshot, RunSpecRow, RunSpecsPart } from "../store.js";
import type { SqliteHandle } from "./handle.js";

const SPEC_COLUMNS = "run_id, spec, spec_digest, labels, priority, created_by, created_at AS spec_created_at";

/** Runs created through the API: the run, its spec, labels and opening commands in one transaction; and the run list. */
export class SqliteRunSpecs implements RunSpecsPart {
  constructor(private readonly h: SqliteHandle) {}

  async createRun(req: CreateRunRequest): Promise<Result<{ created: boolean; run: RunSnapshot; spec: RunSpecRow }>> {
    const checked = checkIdentity(req.identity);
    if (!checked.ok) return checked;
    const id = checked.value;
    const refused = openingCommandsRefusal(id.runId, req.commands);
    if (refused) return refused;
    return this.h.write((): Result<{ created: boolean; run: RunSnapshot; spec: RunSpecRow }> => {
      const existing = this.h.runRow(id.runId);
      if (existing) {
        const stored = this.specRow(id.runId);
        const conflict = existingRunRefusal(id.runId, stored, req.spec.specDigest);
        return conflict ?? ok({ created: false, run: this.h.snapshot(existing), spec: stored! });
      }
      const bytes = req.commands.reduce((n, c) => n + c.envelope.length + c.payload.length, req.spec.spec.length);
      if (this.h.wouldExceed(bytes)) return this.h.storeFull();
      this.h.insertRun(id, req.init);
      const { spec, specDigest, labels, priority, createdBy, traceParent } = req.spec;
      this.h
        .sql(
          "INSERT INTO run_specs (run_id, spec, spec_digest, labels, priority, created_by, created_at, trace_parent) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .run(
          id.runId,
          spec,
          specDigest,
          JSON.stringify(labels),
          priority,
          createdBy,
          req.init.nowMs,
          traceParent ?? null,
        );
      for (const [key, value] of Object.entries(labels))
        this.h.sql("INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)").run(id.runId, key, value);
      // Every API-created run is queued, in the same transaction: no run exists unqueued.
      this.h
        .sql("INSERT INTO dispatch (run_id, state, priority, queued_at) VALUES (?, 'queued', ?, ?)")
        .run(id.runId, priority, req.init.nowMs);
      for (const c of req.commands)
        this.h
          .sql(
            "INSERT INTO commands (run_id, controller_seq, command_id, command_type, payload, envelope, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
          )
          .run(id.runId, c.controllerSeq, c.commandId, c.type, c.payload, c.envelope, req.init.nowMs);
      return ok({ created: true, run: this.h.snapshot(this.h.runRow(id.runId)!), spec: this.specRow(id.runId)! });
    });
  }

  runSpec(runId: string): Promise<RunSpecRow | undefined> {
    return this.h.read(() => this.specRow(runId));
  }

  async listRuns(query: RunQuery): Promise<RunListPage> {
    const checked = checkRunQuery(query);
    if (!checked.ok) throw new RangeError(checked.error.message);
    const { text, values } = runListQuery(query, () => "?");
    return this.h.read(() => runListPage(this.h.sql(text).all(...values) as Row[], query.limit));
  }

  private specRow(runId: string): RunSpecRow | undefined {
    const r = this.h.sql(`SELECT ${SPEC_COLUMNS} FROM run_specs WHERE run_id = ?`).get(runId) as Row | undefined;
    return r ? runSpecFrom(r) : undefined;
  }
}
