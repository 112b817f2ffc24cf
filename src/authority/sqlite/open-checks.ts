import { checkIdentity, IDENTITY_PATTERN } from "../identity.js";
import { StateError } from "../../storage/private-sqlite.js";
import { opensServerKeyCheck, serverKeyCheck } from "../sealed-credential.js";
import { COMMITTED_WINDOW, MAX_COMMAND_BYTES, MAX_COMMANDS, RESULT_STATUSES } from "../limits.js";
import { identityFrom, type Row } from "../store-rows.js";
import { migrateSqlite } from "./migrate.js";
import type { SqliteHandle } from "./handle.js";

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** What opening a store checks: its migrations, its server key and the invariants of its rows. */
export class SqliteOpenChecks {
  constructor(private readonly h: SqliteHandle) {}

  initialise(adoptServerKey: boolean): void {
    const applied = migrateSqlite(this.h.db, this.h.path, Date.now());
    if (applied.includes(1)) {
      this.h.sql("INSERT INTO meta (key, value) VALUES ('server_key_check', ?)").run(serverKeyCheck(this.h.serverKey));
      return;
    }
    this.checkServerKey(adoptServerKey);
    this.checkInvariants();
  }

  /**
   * The server key must be the one the store's credentials are sealed under, and no credential
   * may be unsealed (an earlier version stored each auth key as itself). Unsealed keys are not
   * sealed now: they may already have been read from the file, so they are refused, or, with
   * `adoptServerKey`, deleted with every other credential.
   */
  private checkServerKey(adopt: boolean): void {
    const check = this.h.sql("SELECT value FROM meta WHERE key = 'server_key_check'").get() as
      { value: string } | undefined;
    const unsealed = (
      this.h.sql("SELECT COUNT(*) AS n FROM credentials WHERE auth_key_digest LIKE 'sha256:%'").get() as { n: number }
    ).n;
    const wrongKey = check !== undefined && !opensServerKeyCheck(this.h.serverKey, check.value);
    if (!wrongKey && unsealed === 0) {
      if (!check)
        this.h
          .sql("INSERT INTO meta (key, value) VALUES ('server_key_check', ?)")
          .run(serverKeyCheck(this.h.serverKey));
      return;
    }
    if (!adopt) {
      if (wrongKey)
        throw new StateError(
          "state_server_key_mismatch",
          this.h.path,
          "the server key is not the one this store's credentials are sealed under: give the authority the key it was opened with before; to change the key, open it once with adoptServerKey, which deletes every ticket and lease (runners need a fresh ticket)",
        );
      throw new StateError(
        "state_credentials_unsealed",
        this.h.path,
        `${unsealed} credential(s) were stored unsealed by an earlier version, and anyone who read this file could use them: open it once with adoptServerKey to delete every ticket and lease (runners need a fresh ticket)`,
      );
    }
    this.h.sql("DELETE FROM credentials").run();
    this.h
      .sql(
        "INSERT INTO meta (key, value) VALUES ('server_key_check', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      )
      .run(serverKeyCheck(this.h.serverKey));
  }

  /** What must hold of a store written only by this code; anything else is refused at open. */
  private checkInvariants(): void {
    const refuse = (code: string, message: string): never => {
      throw new StateError(code, this.h.path, message);
    };
    for (const r of this.h.sql("SELECT * FROM runs").all() as Row[]) {
      const identity = identityFrom(r);
      const checked = checkIdentity(identity);
      if (!checked.ok) refuse("state_identity_invalid", `run ${JSON.stringify(r.run_id)}: ${checked.error.message}`);
      const runId = identity.runId;
      const acked = r.acked_source_seq as number;
      if (!(acked >= 0 && (r.revocation_epoch as number) >= 0 && (r.connection_count as number) >= 0))
        refuse("state_counters_invalid", `run ${runId}: negative cursor or counter`);
      const seqs = this.h
        .sql(
          "SELECT controller_seq, status, result, length(CAST(envelope AS BLOB)) AS bytes FROM commands WHERE run_id = ? ORDER BY controller_seq",
        )
        .all(runId) as Row[];
      if (seqs.length > MAX_COMMANDS)
        refuse("state_commands_invalid", `run ${runId} holds ${seqs.length} commands; the bound is ${MAX_COMMANDS}`);
      seqs.forEach((c, i) => {
        if (c.controller_seq !== i + 1)
          refuse(
            "state_commands_invalid",
            `run ${runId}: command at position ${i + 1} has controllerSeq ${String(c.controller_seq)}`,
          );
        if (c.status !== null && !(RESULT_STATUSES as readonly unknown[]).includes(c.status))
          refuse("state_commands_invalid", `run ${runId}: command ${i + 1} has status ${String(c.status)}`);
        if ((c.status === null) !== (c.result === null))
          refuse(
            "state_commands_invalid",
            `run ${runId}: command ${i + 1} has a status without a result or a result without a status`,
          );
        if ((c.bytes as number) > MAX_COMMAND_BYTES)
          refuse("state_commands_invalid", `run ${runId}: command ${i + 1} is over ${MAX_COMMAND_BYTES} bytes`);
      });
      const window = this.h.sql("SELECT source_seq FROM committed_events WHERE run_id = ?").all(runId) as Array<{
        source_seq: number;
      }>;
      if (window.length > COMMITTED_WINDOW)
        refuse(
          "state_window_invalid",
          `run ${runId} holds ${window.length} committed events; the window is ${COMMITTED_WINDOW}`,
        );
      for (const w of window) {
        if (!(w.source_seq <= acked && w.source_seq > acked - COMMITTED_WINDOW))
          refuse(
            "state_window_invalid",
            `run ${runId}: committed event ${w.source_seq} is outside (${acked - COMMITTED_WINDOW}, ${acked}]`,
          );
      }
      const terminal = this.h.terminalSourceSeq(runId);
      if (terminal !== null && terminal !== acked)
        refuse(
          "state_window_invalid",
          `run ${runId}: events are committed after its run.terminal (sourceSeq ${terminal}, cursor ${acked})`,
        );
      const logged = (
        this.h.sql("SELECT MAX(source_seq) AS seq FROM event_log WHERE run_id = ?").get(runId) as { seq: number | null }
      ).seq;
      if (logged !== null && logged !== acked)
        refuse("state_log_invalid", `run ${runId}: the run log ends at sourceSeq ${logged}, the cursor is ${acked}`);
    }
    for (const c of this.h.sql("SELECT * FROM credentials").all() as Row[]) {
      if (!DIGEST.test(c.credential_id as string))
        refuse("state_credential_invalid", "a credential record's locator is not a sha256 digest");
      const row = this.h.credentialOf(c);
      if (
        row.kind === "lease" &&
        (row.leaseId === null || !IDENTITY_PATTERN.test(row.leaseId) || row.protocolVersion === null)
      )
        refuse("state_credential_invalid", "a lease record has no lease id or protocol version");
    }
    const tallies = this.h
      .sql(
        `SELECT a.count, a.first_id, a.latest_id, f.id AS first_found, l.id AS latest_found FROM auth_failures a
      LEFT JOIN diagnostics f ON f.id = a.first_id AND f.run_id = a.run_id AND f.code = a.code
      LEFT JOIN diagnostics l ON l.id = a.latest_id AND l.run_id = a.run_id AND l.code = a.code`,
      )
      .all() as Row[];
    for (const t of tallies) {
      const consistent =
        (t.count as number) >= 1 &&
        ((t.count as number) === 1) === (t.first_id === t.latest_id) &&
        t.first_found !== null &&
        t.latest_found !== null;
      if (!consistent)
        refuse("state_diagnostics_invalid", "an auth-failure tally does not fit the diagnostics it keeps");
    }
    for (const r of this.h
      .sql(
        "SELECT r.previous_expires_at, r.renewals, c.kind, c.expires_at FROM lease_renewals r LEFT JOIN credentials c USING (credential_id)",
      )
      .all() as Row[]) {
      if (
        r.kind !== "lease" ||
        (r.renewals as number) < 1 ||
        (r.previous_expires_at as number) > (r.expires_at as number)
      )
        refuse("state_credential_invalid", "a lease renewal record does not fit a lease");
    }
  }
}
