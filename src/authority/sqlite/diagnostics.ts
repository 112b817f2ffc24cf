import { cutText } from "../../contract/text-cut.js";
import { MAX_DIAGNOSTIC_CODE, MAX_DIAGNOSTIC_MESSAGE, MAX_DIAGNOSTICS } from "../limits.js";
import type { Row } from "../store-rows.js";
import type { Diagnostic, DiagnosticsPart } from "../store.js";
import type { SqliteHandle } from "./handle.js";

/** The diagnostics a run's auth-failure tallies keep (the run is the parameter @run). */
const AUTH_FAILURE_IDS =
  "SELECT first_id FROM auth_failures WHERE run_id = @run UNION SELECT latest_id FROM auth_failures WHERE run_id = @run";

/** Diagnostics, the newest 32 a run keeps, and the tallies of its refusals before authentication. */
export class SqliteDiagnostics implements DiagnosticsPart {
  constructor(private readonly h: SqliteHandle) {}

  async recordMalformedFrame(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.h.write(() => {
      if (
        this.h.sql("UPDATE runs SET malformed_frames = malformed_frames + 1 WHERE run_id = ?").run(runId).changes === 1
      )
        this.insertDiagnostic(runId, diagnostic, nowMs);
    });
  }

  async recordDiagnostic(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.h.write(() => {
      if (this.h.runRow(runId)) this.insertDiagnostic(runId, diagnostic, nowMs);
    });
  }

  /**
   * A refusal before authentication: counted per code, and only the first and the latest of a
   * code are kept as diagnostics, apart from the window of 32, so that a flood of them never
   * pushes out what else happened to the run.
   */
  async recordAuthFailure(runId: string, diagnostic: Diagnostic, nowMs: number): Promise<void> {
    await this.h.write(() => {
      if (!this.h.runRow(runId)) return;
      const code = diagnostic.code.slice(0, MAX_DIAGNOSTIC_CODE);
      const id = this.appendDiagnostic(runId, diagnostic, nowMs);
      const tally = this.h
        .sql("SELECT count, first_id, latest_id FROM auth_failures WHERE run_id = ? AND code = ?")
        .get(runId, code) as Row | undefined;
      if (!tally)
        return void this.h
          .sql("INSERT INTO auth_failures (run_id, code, count, first_id, latest_id) VALUES (?, ?, 1, ?, ?)")
          .run(runId, code, id, id);
      if (tally.latest_id !== tally.first_id) this.h.sql("DELETE FROM diagnostics WHERE id = ?").run(tally.latest_id);
      this.h
        .sql("UPDATE auth_failures SET count = count + 1, latest_id = ? WHERE run_id = ? AND code = ?")
        .run(id, runId, code);
    });
  }

  authFailures(runId: string): Promise<Record<string, number>> {
    return this.h.read(() => {
      const rows = this.h
        .sql("SELECT code, count FROM auth_failures WHERE run_id = ? ORDER BY code")
        .all(runId) as Array<{ code: string; count: number }>;
      return Object.fromEntries(rows.map((r) => [r.code, r.count]));
    });
  }

  diagnostics(runId: string): Promise<Diagnostic[]> {
    return this.h.read(
      () => this.h.sql("SELECT code, message FROM diagnostics WHERE run_id = ? ORDER BY id").all(runId) as Diagnostic[],
    );
  }

  /** Appends to the run's window of 32; the first and latest refusal of each code stay outside it. */
  private insertDiagnostic(runId: string, d: Diagnostic, nowMs: number): void {
    this.appendDiagnostic(runId, d, nowMs);
    this.h
      .sql(
        `DELETE FROM diagnostics WHERE run_id = @run AND id NOT IN (${AUTH_FAILURE_IDS})
      AND id NOT IN (SELECT id FROM diagnostics WHERE run_id = @run AND id NOT IN (${AUTH_FAILURE_IDS}) ORDER BY id DESC LIMIT @max)`,
      )
      .run({ run: runId, max: MAX_DIAGNOSTICS });
  }

  private appendDiagnostic(runId: string, d: Diagnostic, nowMs: number): number {
    const inserted = this.h
      .sql("INSERT INTO diagnostics (run_id, code, message, at) VALUES (?, ?, ?, ?)")
      .run(runId, d.code.slice(0, MAX_DIAGNOSTIC_CODE), cutText(d.message, MAX_DIAGNOSTIC_MESSAGE), nowMs);
    return Number(inserted.lastInsertRowid);
  }
}
