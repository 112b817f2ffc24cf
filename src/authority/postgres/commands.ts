import { fail, ok, type Result } from "../errors.js";
import { pendingCommandTimesQuery } from "../pending-commands-query.js";
import { appendCommandRefusal, commandResultDecision, currentConnection } from "../store-rules.js";
import { commandFrom, type Row } from "../store-rows.js";
import type { CommandRow, CommandsPart, NewCommand, NewCommandResult } from "../store.js";
import type { PostgresHandle } from "./handle.js";

/** The command queue: appended in controllerSeq order (with a notice to other instances), delivered, answered once. */
export class PostgresCommands implements CommandsPart {
  constructor(private readonly h: PostgresHandle) {}

  async command(runId: string, commandId: string): Promise<CommandRow | undefined> {
    const [r] = await this.h.query("SELECT * FROM commands WHERE run_id = $1 AND command_id = $2", [runId, commandId]);
    return r ? commandFrom(r) : undefined;
  }

  async commands(runId: string): Promise<CommandRow[]> {
    return (await this.h.query("SELECT * FROM commands WHERE run_id = $1 ORDER BY controller_seq", [runId])).map(
      commandFrom,
    );
  }

  async pendingCommandTimes(limit: number): Promise<number[]> {
    return (await this.h.query(pendingCommandTimesQuery("$1"), [limit])).map((r) => Number(r.queued_at));
  }

  async appendCommand(runId: string, cmd: NewCommand, nowMs: number): Promise<Result<CommandRow>> {
    return this.h.transaction(async (c): Promise<Result<CommandRow>> => {
      if (!(await this.h.lockRun(c, runId))) return fail("unknown_run", "/runId", `no run ${runId}`);
      const count = (
        (await c.query("SELECT COUNT(*) AS n FROM commands WHERE run_id = $1", [runId])).rows[0] as { n: number }
      ).n;
      const refused = appendCommandRefusal(runId, count, cmd.controllerSeq);
      if (refused) return refused;
      if (
        (await c.query("SELECT 1 FROM commands WHERE run_id = $1 AND command_id = $2", [runId, cmd.commandId])).rowCount
      )
        return fail("command_conflict", "/commandId", `${cmd.commandId} is already queued`);
      const [row] = (
        await c.query(
          "INSERT INTO commands (run_id, controller_seq, command_id, command_type, payload, envelope, queued_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *",
          [runId, cmd.controllerSeq, cmd.commandId, cmd.type, cmd.payload, cmd.envelope, nowMs],
        )
      ).rows as Row[];
      await this.h.notify(c, { kind: "command_queued", runId });
      return ok(commandFrom(row!));
    });
  }

  async deliverNextCommand(
    runId: string,
    connectionId: string,
    repeat: boolean,
    nowMs: number,
  ): Promise<Result<CommandRow | null>> {
    return this.h.transaction(async (c): Promise<Result<CommandRow | null>> => {
      const run = currentConnection(await this.h.lockRun(c, runId), runId, connectionId);
      if (!run.ok) return run;
      const [next] = (
        await c.query("SELECT * FROM commands WHERE run_id = $1 AND status IS NULL ORDER BY controller_seq LIMIT 1", [
          runId,
        ])
      ).rows as Row[];
      if (!next) return ok(null);
      if (next.last_delivered_connection_id === connectionId && !repeat) return ok(null);
      const [row] = (
        await c.query(
          "UPDATE commands SET delivery_count = delivery_count + 1, last_delivered_connection_id = $1, last_delivered_at = $2 WHERE run_id = $3 AND controller_seq = $4 RETURNING *",
          [connectionId, nowMs, runId, next.controller_seq],
        )
      ).rows as Row[];
      return ok(commandFrom(row!));
    });
  }

  async recordCommandResult(
    runId: string,
    connectionId: string,
    res: NewCommandResult,
    nowMs: number,
  ): Promise<Result<{ duplicate: boolean; command: CommandRow }>> {
    return this.h.transaction(async (c): Promise<Result<{ duplicate: boolean; command: CommandRow }>> => {
      const run = currentConnection(await this.h.lockRun(c, runId), runId, connectionId);
      if (!run.ok) return run;
      const [row] = (
        await c.query("SELECT * FROM commands WHERE run_id = $1 AND command_id = $2", [runId, res.commandId])
      ).rows as Row[];
      const decided = commandResultDecision(runId, row ? commandFrom(row) : undefined, res);
      if (!decided.ok) return decided;
      if (decided.value.duplicate)
        await c.query("UPDATE runs SET duplicate_command_results = duplicate_command_results + 1 WHERE run_id = $1", [
          runId,
        ]);
      else
        await c.query(
          "UPDATE commands SET status = $1, result = $2, result_at = $3 WHERE run_id = $4 AND command_id = $5",
          [res.status, res.result, nowMs, runId, res.commandId],
        );
      return decided;
    });
  }
}
