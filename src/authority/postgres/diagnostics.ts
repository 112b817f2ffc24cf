import type pg from "pg";
import { cutText } from "../../contract/text-cut.js";
import { MAX_DIAGNOSTIC_CODE, MAX_DIAGNOSTIC_MESSAGE, MAX_DIAGNOSTICS } from "../limits.js";
import type { Row } from "../store-rows.js";
import type { Diagnostic, DiagnosticsPart } from "../store.js";
import type { PostgresHandle } from "./handle.js";

/** The diagnostics a run's auth-failure tallies keep. */
const AUTH_FAILURE_IDS =
  "SELECT first_id FROM auth_failures WHERE run_id = $1 UNION SELECT latest_id FROM auth_failures WHERE run_id = $1";

/** PostgreSQL TEXT holds no NUL: a diagnostic keeps the rest of its text. */
const text = (value: string, max: number): string => cutText(value, max).replaceAll("\0", "\uFFFD");

/** Diagnostics, the newest 32 a run keeps, and the tallies of its refusals before authentication. */
export class PostgresDiagnostics implements DiagnosticsPart {
  constructor(private readonly h: PostgresHandle) {}

  async recordMalformedFrame(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.h.transaction(async (c) => {
      if (
        (await c.query("UPDATE runs SET malformed_frames = malformed_frames + 1 WHERE run_id = $1", [runId]))
          .rowCount === 1
      )
        await this.insertDiagnostic(c, runId, diagnostic, nowMs);
    });
  }

  async recordDiagnostic(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.h.transaction(async (c) => {
      if (await this.h.lockRun(c, runId)) await this.insertDiagnostic(c, runId, diagnostic, nowMs);
    });
  }

  async recordAuthFailure(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.h.transaction(async (c) => {
      if (!(await this.h.lockRun(c, runId))) return;
      const code = text(diagnostic.code, MAX_DIAGNOSTIC_CODE);
      const id = await this.appendDiagnostic(c, runId, diagnostic, nowMs);
      const [tally] = (
        await c.query("SELECT count, first_id, latest_id FROM auth_failures WHERE run_id = $1 AND code = $2", [
          runId,
          code,
        ])
      ).rows as Row[];
      if (!tally)
        return void (await c.query(
          "INSERT INTO auth_failures (run_id, code, count, first_id, latest_id) VALUES ($1, $2, 1, $3, $3)",
          [runId, code, id],
        ));
      if (tally.latest_id !== tally.first_id) await c.query("DELETE FROM diagnostics WHERE id = $1", [tally.latest_id]);
      await c.query("UPDATE auth_failures SET count = count + 1, latest_id = $1 WHERE run_id = $2 AND code = $3", [
        id,
        runId,
        code,
      ]);
    });
  }

  async authFailures(runId: string): Promise<Record<string, number>> {
    const rows = await this.h.query(
      'SELECT code, count FROM auth_failures WHERE run_id = $1 ORDER BY code COLLATE "C"',
      [runId],
    );
    return Object.fromEntries(rows.map((r) => [r.code as string, r.count as number]));
  }

  async diagnostics(runId: string): Promise<Diagnostic[]> {
    return (await this.h.query("SELECT code, message FROM diagnostics WHERE run_id = $1 ORDER BY id", [
      runId,
    ])) as unknown as Diagnostic[];
  }

  private async insertDiagnostic(c: pg.PoolClient, runId: string, d: Diagnostic, nowMs: number): Promise<void> {
    await this.appendDiagnostic(c, runId, d, nowMs);
    await c.query(
      `DELETE FROM diagnostics WHERE run_id = $1 AND id NOT IN (${AUTH_FAILURE_IDS})
       AND id NOT IN (SELECT id FROM diagnostics WHERE run_id = $1 AND id NOT IN (${AUTH_FAILURE_IDS}) ORDER BY id DESC LIMIT $2)`,
      [runId, MAX_DIAGNOSTICS],
    );
  }

  private async appendDiagnostic(c: pg.PoolClient, runId: string, d: Diagnostic, nowMs: number): Promise<number> {
    const [row] = (
      await c.query("INSERT INTO diagnostics (run_id, code, message, at) VALUES ($1, $2, $3, $4) RETURNING id", [
        runId,
        text(d.code, MAX_DIAGNOSTIC_CODE),
        text(d.message, MAX_DIAGNOSTIC_MESSAGE),
        nowMs,
      ])
    ).rows as Array<{ id: number }>;
    return row!.id;
  }
}
