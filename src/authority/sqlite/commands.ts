import { fail, ok, type Result } from "../errors.js";
import { pendingCommandTimesQuery } from "../pending-commands-query.js";
import { appendCommandRefusal, commandResultDecision } from "../store-rules.js";
import { commandFrom, type Row } from "../store-rows.js";
import type { CommandRow, CommandsPart, NewCommand, NewCommandResult } from "../store.js";
import type { SqliteHandle } from "./handle.js";

/** The command queue: appended in controllerSeq order, delivered to the current connection, answered once. */
export class SqliteCommands implements CommandsPart {
  constructor(private readonly h: SqliteHandle) {}

  command(runId: string, commandId: string): Promise<CommandRow | undefined> {
    return this.h.read(() => {
      const r = this.h.sql("SELECT * FROM commands WHERE run_id = ? AND command_id = ?").get(runId, commandId) as
        Row | undefined;
      return r ? commandFrom(r) : undefined;
    });
  }

  commands(runId: string): Promise<CommandRow[]> {
    return this.h.read(() =>
      (this.h.sql("SELECT * FROM commands WHERE run_id = ? ORDER BY controller_seq").all(runId) as Row[]).map(
        commandFrom,
      ),
    );
  }

  pendingCommandTimes(limit: number): Promise<number[]> {
    return this.h.read(() => this.h.sql(pendingCommandTimesQuery("?")).pluck().all(limit) as number[]);
  }

  async appendCommand(runId: string, c: NewCommand, nowMs: number): Promise<Result<CommandRow>> {
    return this.h.write((): Result<CommandRow> => {
      if (!this.h.runRow(runId)) return fail("unknown_run", "/runId", `no run ${runId}`);
      const count = (this.h.sql("SELECT COUNT(*) AS n FROM commands WHERE run_id = ?").get(runId) as { n: number }).n;
      const refused = appendCommandRefusal(runId, count, c.controllerSeq);
      if (refused) return refused;
      if (this.h.sql("SELECT 1 FROM commands WHERE run_id = ? AND command_id = ?").get(runId, c.commandId))
        return fail("command_conflict", "/commandId", `${c.commandId} is already queued`);
      if (this.h.wouldExceed(Buffer.byteLength(c.envelope) + Buffer.byteLength(c.payload))) return this.h.storeFull();
      this.h
        .sql(
          "INSERT INTO commands (run_id, controller_seq, command_id, command_type, payload, envelope, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .run(runId, c.controllerSeq, c.commandId, c.type, c.payload, c.envelope, nowMs);
      return ok(
        commandFrom(
          this.h
            .sql("SELECT * FROM commands WHERE run_id = ? AND controller_seq = ?")
            .get(runId, c.controllerSeq) as Row,
        ),
      );
    });
  }

  async deliverNextCommand(
    runId: string,
    connectionId: string,
    repeat: boolean,
    nowMs: number,
  ): Promise<Result<CommandRow | null>> {
    return this.h.write((): Result<CommandRow | null> => {
      const run = this.h.currentRun(runId, connectionId);
      if (!run.ok) return run;
      const next = this.h
        .sql("SELECT * FROM commands WHERE run_id = ? AND status IS NULL ORDER BY controller_seq LIMIT 1")
        .get(runId) as Row | undefined;
      if (!next) return ok(null);
      if (next.last_delivered_connection_id === connectionId && !repeat) return ok(null);
      this.h
        .sql(
          "UPDATE commands SET delivery_count = delivery_count + 1, last_delivered_connection_id = ?, last_delivered_at = ? WHERE run_id = ? AND controller_seq = ?",
        )
        .run(connectionId, nowMs, runId, next.controller_seq);
      return ok(
        commandFrom(
          this.h
            .sql("SELECT * FROM commands WHERE run_id = ? AND controller_seq = ?")
            .get(runId, next.controller_seq) as Row,
        ),
      );
    });
  }

  async recordCommandResult(
    runId: string,
    connectionId: string,
    res: NewCommandResult,
    nowMs: number,
  ): Promise<Result<{ duplicate: boolean; command: CommandRow }>> {
    return this.h.write((): Result<{ duplicate: boolean; command: CommandRow }> => {
      const run = this.h.currentRun(runId, connectionId);
      if (!run.ok) return run;
      const row = this.h.sql("SELECT * FROM commands WHERE run_id = ? AND command_id = ?").get(runId, res.commandId) as
        Row | undefined;
      const decided = commandResultDecision(runId, row ? commandFrom(row) : undefined, res);
      if (!decided.ok) return decided;
      if (decided.value.duplicate)
        this.h
          .sql("UPDATE runs SET duplicate_command_results = duplicate_command_results + 1 WHERE run_id = ?")
          .run(runId);
      else
        this.h
          .sql("UPDATE commands SET status = ?, result = ?, result_at = ? WHERE run_id = ? AND command_id = ?")
          .run(res.status, res.result, nowMs, runId, res.commandId);
      return decided;
    });
  }
}
