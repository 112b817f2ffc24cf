import assert from "node:assert/strict";
import { mkdirSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { STORE_FILE, STORE_SCHEMA, MAX_DIAGNOSTICS } from "../../src/authority/limits.js";
import { registerRun } from "../../src/authority/runs.js";
import { StateError } from "../../src/storage/private-sqlite.js";
import { authority, codeOf, connect, event, identity, openStore, tempRoot, unwrap, withRun } from "./support.js";

const refuses = (fn: () => unknown, code: string) =>
  assert.throws(fn, (err: unknown) => err instanceof StateError && err.code === code, code);

describe("authority store (SQLite)", () => {
  const tmp = tempRoot("prp-authority-store-");
  after(tmp.cleanup);

  it("creates a private directory and private files in WAL mode and records its schema", async () => {
    const d = tmp.dir();
    const store = openStore(d);
    unwrap(await registerRun(store, identity()));
    assert.equal(statSync(d).mode & 0o777, 0o700);
    for (const f of [STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`])
      assert.equal(statSync(join(d, f)).mode & 0o777, 0o600, f);
    await store.close();
    const raw = new Database(join(d, STORE_FILE), { readonly: true });
    assert.equal(raw.pragma("journal_mode", { simple: true }), "wal");
    assert.equal(
      (raw.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string }).value,
      STORE_SCHEMA,
    );
    raw.close();
  });

  it("refuses a symlinked state directory, a symlinked database file and another schema", async () => {
    const real = tmp.dir();
    await openStore(real).close();
    const link = `${real}-link`;
    symlinkSync(real, link);
    refuses(() => openStore(link), "state_symlink");

    const other = tmp.dir();
    mkdirSync(other, { mode: 0o700 });
    symlinkSync(join(real, STORE_FILE), join(other, STORE_FILE));
    refuses(() => openStore(other), "state_symlink");

    const raw = new Database(join(real, STORE_FILE));
    raw.prepare("UPDATE meta SET value = 'paperclip.runner.durable.state.v1' WHERE key = 'schema'").run();
    raw.close();
    refuses(() => openStore(real), "state_unknown_schema");
  });

  it("refuses another identity for a stored run and identity values outside the pattern", async () => {
    const store = openStore(tmp.dir());
    unwrap(await registerRun(store, identity()));
    for (const field of [
      "runnerInstanceId",
      "environmentLeaseId",
      "normalizedSessionId",
      "turnId",
      "itemId",
    ] as const) {
      const changed = await registerRun(store, identity(1, { [field]: `${field}_other` }));
      assert.equal(codeOf(changed), "run_identity_mismatch", field);
      assert.equal(changed.ok ? "" : changed.error.path, `/${field}`);
    }
    assert.equal(
      unwrap(await registerRun(store, identity())).identity.runId,
      "run_1",
      "the same identity finds the run again",
    );
    for (const bad of ["_leading", "has/slash", "has space", "", "x".repeat(241), "é"]) {
      assert.equal(
        codeOf(await registerRun(store, identity(2, { turnId: bad }))),
        "invalid_identity",
        JSON.stringify(bad),
      );
    }
    assert.equal(codeOf(await registerRun(store, identity(2), { protocolVersion: 4 })), "invalid_protocol_version");
    assert.deepEqual(await store.runIds(), ["run_1"]);
    await store.close();
  });

  it("checks the stored identities and invariants when it is opened again", async () => {
    const cases: Array<[string, string]> = [
      ["UPDATE runs SET turn_id = 'bad turn'", "state_identity_invalid"],
      ["UPDATE commands SET controller_seq = 5", "state_commands_invalid"],
      ["UPDATE commands SET status = 'accepted', result = '{}'", "state_commands_invalid"],
      ["UPDATE runs SET acked_source_seq = 100", "state_window_invalid"],
      // An event committed after the run's terminal (a committed terminal is final).
      [
        "INSERT INTO committed_events SELECT run_id, 2, 'event_after', event_type, priority, envelope, 1, committed_at FROM committed_events; UPDATE committed_events SET event_type = 'run.terminal' WHERE source_seq = 1; UPDATE runs SET acked_source_seq = 2",
        "state_window_invalid",
      ],
      // The run log ends at the cursor: every committed event is kept in the commit that advanced it.
      ["UPDATE event_log SET source_seq = 7", "state_log_invalid"],
      ["UPDATE credentials SET auth_key_digest = 'plain'", "state_credential_invalid"],
      ["UPDATE auth_failures SET count = 0", "state_diagnostics_invalid"],
      ["DELETE FROM diagnostics WHERE code = 'proof_mismatch'", "state_diagnostics_invalid"],
    ];
    for (const [tamper, code] of cases) {
      const d = tmp.dir();
      const a = authority(d);
      await withRun(a);
      const c = await connect(a);
      unwrap(await a.ingest.ingest("run_1", c.connectionId, event(1)));
      unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "go" }));
      for (const n of [1, 2, 3])
        await a.store.recordAuthFailure("run_1", { code: "proof_mismatch", message: `attempt ${n}` }, a.clock.now());
      await a.store.close();
      assert.doesNotThrow(() => openStore(d).close());
      const raw = new Database(join(d, STORE_FILE));
      raw.exec(tamper);
      raw.close();
      refuses(() => openStore(d), code);
    }
  });

  it("keeps two runs in one store independent: cursors, windows, commands, credentials", async () => {
    const a = authority(tmp.dir());
    await withRun(a, 1);
    await withRun(a, 2);
    const c1 = await connect(a, "run_1");
    const c2 = await connect(a, "run_2");
    assert.equal(c1.connectionId, "connection_1");
    assert.equal(c2.connectionId, "connection_1", "connection numbers are per run");
    for (const seq of [1, 2, 3]) unwrap(await a.ingest.ingest("run_1", c1.connectionId, event(seq, 1)));
    unwrap(await a.ingest.ingest("run_2", c2.connectionId, event(1, 2)));
    assert.equal(
      codeOf(await a.ingest.ingest("run_2", c2.connectionId, event(2, 1))),
      "identity_mismatch",
      "run 1's event is not run 2's",
    );
    unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "one" }));
    unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "two" }));
    const q2 = unwrap(await a.commands.queueCommand("run_2", "turn.start", { text: "other" }));
    assert.equal(q2.controllerSeq, 1);
    assert.equal(q2.commandId, "command_prp_00000001");
    const r1 = (await a.store.run("run_1"))!;
    const r2 = (await a.store.run("run_2"))!;
    assert.equal(r1.ackedSourceSeq, 3);
    assert.equal(r2.ackedSourceSeq, 1);
    assert.equal(r1.commandCount, 2);
    assert.equal(r2.commandCount, 1);
    assert.equal((await a.store.committedWindow("run_1")).length, 3);
    assert.equal((await a.store.committedWindow("run_2")).length, 1);
    unwrap(await a.credentials.revoke("run_1"));
    assert.equal((await a.store.run("run_2"))!.revocationEpoch, 0, "revoking one run leaves the other");
    const lease2 = (await a.credentials.lookupCredential(await findLease(a, "run_2")))!;
    assert.equal(lease2.revoked, false);
    assert.equal(lease2.identity.runId, "run_2");
    await a.store.close();
  });

  it("refuses growth past its size bound and a file over the bound at open", async () => {
    const d = tmp.dir();
    const store = openStore(d, { maxStoreBytes: 512 * 1024 });
    const a = authority(d, { store });
    await withRun(a);
    const big = "x".repeat(200 * 1024);
    let last = await a.commands.queueCommand("run_1", "turn.start", { text: big });
    for (let i = 0; i < 5 && last.ok; i++)
      last = await a.commands.queueCommand("run_1", "turn.start", { text: `${i}${big}` });
    assert.equal(codeOf(last), "store_full");
    await store.close();
    refuses(() => openStore(d, { maxStoreBytes: 64 * 1024 }), "state_too_large");
  });

  it("keeps at most 32 diagnostics per run", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    for (let i = 0; i < MAX_DIAGNOSTICS + 8; i++)
      await a.store.recordDiagnostic("run_1", { code: "test", message: `d${i}` }, a.clock.now());
    const kept = await a.store.diagnostics("run_1");
    assert.equal(kept.length, MAX_DIAGNOSTICS);
    assert.equal(kept.at(-1)!.message, `d${MAX_DIAGNOSTICS + 7}`);
    await a.store.close();
  });

  it("counts refusals before authentication per code and keeps only their first and latest, apart from the 32", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    await withRun(a, 2);
    await a.store.recordDiagnostic("run_1", { code: "meaningful", message: "before the flood" }, a.clock.now());
    for (let i = 1; i <= 200; i++) {
      await a.store.recordAuthFailure("run_1", { code: "proof_mismatch", message: `p${i}` }, a.clock.now());
      if (i % 50 === 0)
        await a.store.recordAuthFailure("run_1", { code: "auth_timeout", message: `t${i}` }, a.clock.now());
    }
    await a.store.recordAuthFailure("run_404", { code: "proof_mismatch", message: "no such run" }, a.clock.now());
    assert.deepEqual(await a.store.authFailures("run_1"), { auth_timeout: 4, proof_mismatch: 200 });
    assert.deepEqual(await a.store.authFailures("run_2"), {}, "another run's tally is its own");
    const kept = (await a.store.diagnostics("run_1")).map((d) => d.message);
    assert.deepEqual(kept, ["before the flood", "p1", "t50", "p200", "t200"]);

    // The window of 32 fills with other diagnostics; the first and latest refusals stay beside it.
    for (let i = 0; i < MAX_DIAGNOSTICS + 4; i++)
      await a.store.recordDiagnostic("run_1", { code: "test", message: `d${i}` }, a.clock.now());
    const after = await a.store.diagnostics("run_1");
    assert.equal(after.filter((d) => d.code === "test").length, MAX_DIAGNOSTICS);
    assert.deepEqual(
      after.filter((d) => d.code !== "test").map((d) => d.message),
      ["p1", "t50", "p200", "t200"],
    );
    await a.store.close();
  });
});

/** The credential id of a run's current lease, found through the store. */
async function findLease(a: ReturnType<typeof authority>, runId: string): Promise<string> {
  const raw = new Database(join(a.dir, STORE_FILE), { readonly: true });
  try {
    return (
      raw.prepare("SELECT credential_id FROM credentials WHERE run_id = ? AND kind = 'lease'").get(runId) as {
        credential_id: string;
      }
    ).credential_id;
  } finally {
    raw.close();
  }
}
