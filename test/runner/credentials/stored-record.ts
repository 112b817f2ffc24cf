import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { STORE_FILE } from "../../../src/authority/limits.js";
import { fakeCredentialFile } from "../../../src/harness/fake-credentials.js";
import { lookAtCredentialFile } from "../../../src/runner/credentials/credential-file.js";
import type { CredentialBinding } from "../../../src/runner/credentials/credential-store.js";
import { STATE_FILE } from "../../../src/runner/durable/runner-state.js";
import { loadedScript } from "../../support/scripts.js";

export interface StoredCredentialEvent {
  sourceSeq: number;
  sourceEventId: string;
  revision: number;
  payload: Record<string, unknown>;
}

/** The auth.credentials.updated events the authority's SQLite file holds for a run, read apart from its code. */
export function storedCredentialEvents(authorityDir: string, runId: string): StoredCredentialEvent[] {
  const db = new Database(join(authorityDir, STORE_FILE), { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        "SELECT source_seq, source_event_id, envelope FROM event_log WHERE run_id = ? AND event_type = 'auth.credentials.updated' ORDER BY source_seq",
      )
      .all(runId) as Array<{ source_seq: number; source_event_id: string; envelope: string }>;
    return rows.map((r) => {
      const payload = (JSON.parse(r.envelope) as { payload: Record<string, unknown> }).payload;
      return {
        sourceSeq: r.source_seq,
        sourceEventId: r.source_event_id,
        revision: payload.revision as number,
        payload,
      };
    });
  } finally {
    db.close();
  }
}

/** The runner state file's credential_observer row, read apart from the runner's code. */
export function storedObserverRow(
  stateDir: string,
): (Omit<CredentialBinding, "provider"> & { bindingId: string }) | undefined {
  const db = new Database(join(stateDir, STATE_FILE), { readonly: true, fileMustExist: true });
  try {
    const r = db.prepare("SELECT binding_id, revision, baseline, pending FROM credential_observer").get() as
      { binding_id: string; revision: number; baseline: string | null; pending: number | null } | undefined;
    return r && { bindingId: r.binding_id, revision: r.revision, baseline: r.baseline, pending: r.pending };
  } finally {
    db.close();
  }
}

/** Which of `needles` occur in the bytes of the files of `dir` (a database with its -wal and -shm). */
export function foundIn(dir: string, needles: string[]): string[] {
  const bytes = Buffer.concat(
    readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => readFileSync(join(dir, e.name))),
  );
  return needles.filter((n) => bytes.includes(Buffer.from(n, "utf8")));
}

/**
 * The credentials-refresh scenario with a deletion after its half write: every fault of the
 * credential file in one run. Its observer must report revisions 1 (refresh) and 2 (account switch).
 */
export function credentialFaultsScript(dir: string): string {
  const script = loadedScript("credentials-refresh").script;
  const steps = [...(script.steps as Array<Record<string, unknown>>)];
  const partial = steps.findIndex((s) => s.action === "write_partial");
  steps.splice(partial + 2, 0, { kind: "credentials", action: "delete" }, { kind: "delay", milliseconds: 1500 });
  const path = join(dir, "credential-faults.json");
  writeFileSync(path, JSON.stringify({ ...script, name: "credential-faults", steps }));
  return path;
}

/** What the scenario puts in the file: tokens, accounts, and the fingerprints of each whole file. */
export function plantedSecrets(dir: string, credentialPath: string): string[] {
  const fingerprints = [
    ["acct-fake-a", "fake-access-token-1"],
    ["acct-fake-a", "fake-access-token-2"],
    ["acct-fake-b", "fake-access-token-2"],
  ].map(([account, token]) => {
    const file = join(dir, `fingerprint-${account}-${token}.json`);
    writeFileSync(file, fakeCredentialFile(account!, token!));
    return (lookAtCredentialFile(file) as { fingerprint: string }).fingerprint;
  });
  return ["fake-access-token", "acct-fake-a", "acct-fake-b", credentialPath, "auth.json", ...fingerprints];
}
