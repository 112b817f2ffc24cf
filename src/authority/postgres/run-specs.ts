import type pg from "pg";
import { ok, type Result } from "../errors.js";
import { checkIdentity } from "../identity.js";
import { checkRunQuery, runListPage, runListQuery } from "../run-list-query.js";
import { runSpecFrom, type Row } from "../store-rows.js";
import { existingRunRefusal, openingCommandsRefusal } from "../store-rules.js";
import type { CreateRunRequest, RunListPage, RunQuery, RunSnapshot, RunSpecRow, RunSpecsPart } from "../store.js";
import type { PostgresHandle } from "./handle.js";

const SPEC_COLUMNS = "run_id, spec, spec_digest, labels, priority, created_by, created_at AS spec_created_at";

/** Runs created through the API: the run, its spec, labels and opening commands in one transaction; and the run list. */
export class PostgresRunSpecs implements RunSpecsPart {
  constructor(private readonly h: PostgresHandle) {}

  async createRun(req: CreateRunRequest): Promise<Result<{ created: boolean; run: RunSnapshot; spec: RunSpecRow }>> {
    const checked = checkIdentity(req.identity);
    if (!checked.ok) return checked;
    const id = checked.value;
    const refused = openingCommandsRefusal(id.runId, req.commands);
    if (refused) return refused;
    return this.h.transaction(async (c): Promise<Result<{ created: boolean; run: RunSnapshot; spec: RunSpecRow }>> => {
      // Two instances creating the same run: the second waits on the first's row lock, then finds it.
      const inserted = await this.h.insertRun(c, id, req.init);
      const run = (await this.h.lockRun(c, id.runId))!;
      if (!inserted) {
        const stored = await this.specRow(c, id.runId);
        const conflict = existingRunRefusal(id.runId, stored, req.spec.specDigest);
        return conflict ?? ok({ created: false, run: await this.h.snapshot(c, run), spec: stored! });
      }
      const { spec, specDigest, labels, priority, createdBy, traceParent } = req.spec;
      await c.query(
        "INSERT INTO run_specs (run_id, spec, spec_digest, labels, priority, created_by, created_at, trace_parent) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        [id.runId, spec, specDigest, JSON.stringify(labels), priority, createdBy, req.init.nowMs, traceParent ?? null],
      );
      for (const [key, value] of Object.entries(labels))
        await c.query("INSERT INTO run_labels (run_id, key, value) VALUES ($1, $2, $3)", [id.runId, key, value]);
      // Every API-created run is queued, in the same transaction: no run exists unqueued.
      await c.query("INSERT INTO dispatch (run_id, state, priority, queued_at) VALUES ($1, 'queued', $2, $3)", [
        id.runId,
        priority,
        req.init.nowMs,
      ]);
      for (const cmd of req.commands)
        await c.query(
          "INSERT INTO commands (run_id, controller_seq, command_id, command_type, payload, envelope, queued_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
          [id.runId, cmd.controllerSeq, cmd.commandId, cmd.type, cmd.payload, cmd.envelope, req.init.nowMs],
        );
      if (req.commands.length > 0) await this.h.notify(c, { kind: "command_queued", runId: id.runId });
      return ok({
        created: true,
        run: await this.h.snapshot(c, (await this.h.lockRun(c, id.runId))!),
        spec: (await this.specRow(c, id.runId))!,
      });
    });
  }

  runSpec(runId: string): Promise<RunSpecRow | undefined> {
    return this.specRow(this.h.pool, runId);
  }

  async listRuns(query: RunQuery): Promise<RunListPage> {
    const checked = checkRunQuery(query);
    if (!checked.ok) throw new RangeError(checked.error.message);
    const { text, values } = runListQuery(query, (n) => `$${n}`);
    return runListPage(await this.h.query(text, values), query.limit);
  }

  private async specRow(c: pg.ClientBase | pg.Pool, runId: string): Promise<RunSpecRow | undefined> {
    const [r] = (await c.query(`SELECT ${SPEC_COLUMNS} FROM run_specs WHERE run_id = $1`, [runId])).rows as Row[];
    return r ? runSpecFrom(r) : undefined;
  }
}
