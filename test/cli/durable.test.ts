import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { STORE_FILE } from "../../src/authority/limits.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { readServerKeyFile } from "../../src/authority/server-key-source.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import { bundleFileProblems, type NativeExecutionBundle } from "../../src/bundle/native-execution.js";
import { decode } from "../../src/contract/index.js";
import { FAULTS } from "../../src/fault/faults.js";
import { seededRandom } from "../../src/fault/seeded-random.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { runPrp } from "./run-cli.js";

describe("durable runs over the encrypted WebSocket", () => {
  let out: string;
  before(() => {
    out = mkdtempSync(join(tmpdir(), "prp-durable-"));
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it("prp demo --json: the happy path ends succeeded, every event committed once, with a valid bundle and private state", () => {
    const run = runPrp(["demo", "--json", "--delay-ms", "0", "--out", out, ...PATIENT_HARNESS]);
    assert.equal(run.status, 0, run.stderr);
    const line = JSON.parse(run.stdout.trim());
    assert.deepEqual(Object.keys(line), ["runId", "runTerminalState", "committedEvents", "deliveries", "bundle"]);
    assert.equal(line.runTerminalState, "succeeded");
    assert.equal(line.committedEvents, 19);
    const bundle = decode(readFileSync(line.bundle), { kind: "native-execution", maxBytes: 16 * 1024 * 1024 });
    assert.ok(bundle.ok, bundle.ok ? "" : bundle.error.message);
    assert.deepEqual(bundleFileProblems(line.bundle, bundle.value as NativeExecutionBundle), []);
    const runDir = dirname(dirname(line.bundle));
    for (const sub of ["authority", "runner-state"]) assert.equal(statSync(join(runDir, sub)).mode & 0o777, 0o700, sub);
    assert.equal(statSync(join(runDir, "runner-state", "runner-state.sqlite")).mode & 0o777, 0o600);
    // The demo's server key is beside the authority's state, and every key in that state is sealed with it.
    assert.equal(statSync(join(runDir, "authority-server-key")).mode & 0o777, 0o600);
    const db = new Database(join(runDir, "authority", STORE_FILE), { readonly: true });
    const stored = (
      db.prepare("SELECT auth_key_digest FROM credentials").all() as Array<{ auth_key_digest: string }>
    ).map((r) => r.auth_key_digest);
    db.close();
    assert.ok(stored.length > 0 && stored.every((v) => v.startsWith("sealed:v1:")), JSON.stringify(stored));
  });

  it("prp demo --server-key-file: the operator's key seals the state (no key generated beside it); a key file open to others is refused before anything starts", async () => {
    const keyFile = join(out, "operator-key");
    writeFileSync(keyFile, `${"5a".repeat(32)}\n`, { mode: 0o644 });
    chmodSync(keyFile, 0o644);
    const loose = runPrp([
      "demo",
      "--json",
      "--delay-ms",
      "0",
      "--out",
      out,
      "--server-key-file",
      keyFile,
      ...PATIENT_HARNESS,
    ]);
    assert.equal(loose.status, 2, loose.stderr);
    assert.match(
      loose.stderr,
      /server_key_wrong_mode: .*operator-key: the server key file has mode 644; it must be 600/,
    );

    chmodSync(keyFile, 0o600);
    const run = runPrp([
      "demo",
      "--json",
      "--delay-ms",
      "0",
      "--out",
      out,
      "--server-key-file",
      keyFile,
      ...PATIENT_HARNESS,
    ]);
    assert.equal(run.status, 0, run.stderr);
    const runDir = dirname(dirname(JSON.parse(run.stdout.trim()).bundle));
    assert.equal(existsSync(join(runDir, "authority-server-key")), false);
    await SqliteAuthorityStore.open(join(runDir, "authority"), { serverKey: readServerKeyFile(keyFile) }).close();
    assert.throws(
      () => SqliteAuthorityStore.open(join(runDir, "authority"), { serverKey: ServerKey.generate() }),
      /state_server_key_mismatch/,
    );
  });

  for (const name of Object.keys(FAULTS)) {
    it(`prp fault ${name} --json passes the judge: the script's events once and in order, contiguous, one terminal last, no secret`, () => {
      const run = runPrp(["fault", name, "--json", "--delay-ms", "0", ...PATIENT_HARNESS, "--out", out]);
      const verdict = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
      const failed = verdict.checks?.filter((c: { passed: boolean }) => !c.passed);
      assert.equal(verdict.passed, true, `seed ${verdict.seed}: ${JSON.stringify(failed)}\n${run.stderr}`);
      assert.equal(verdict.fault, name);
      assert.ok(Number.isInteger(verdict.seed), "the drawn seed is in the JSON line");
      assert.deepEqual(
        verdict.checks.map((c: { check: string }) => c.check),
        ["script", "sequence", "terminal", "once-per-run", "goals", "fault", "outbox", "secrets", "processes"],
      );
      assert.equal(verdict.secretsFound, 0);
      assert.ok(
        verdict.commandEffects <= 1,
        "no command has two effects (a crash right after journaling leaves it with none)",
      );
      assert.equal(run.status, 0);
    });
  }

  it("prp fault crash-after-commit --at 19: killed right after committing its terminal, the replacement delivers that one terminal and no second", () => {
    const run = runPrp([
      "fault",
      "crash-after-commit",
      "--json",
      "--seed",
      "7",
      "--at",
      "19",
      "--delay-ms",
      "0",
      ...PATIENT_HARNESS,
      "--out",
      out,
    ]);
    const verdict = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
    assert.equal(verdict.seed, 7);
    assert.equal(
      verdict.killPoint,
      "the runner SIGKILLs itself after committing event 19 to its outbox, before sending it",
    );
    assert.deepEqual(
      verdict.checks.filter((c: { passed: boolean }) => !c.passed),
      [],
    );
    assert.equal(verdict.committedEvents, 19, "the happy path's 19 events, the terminal last");
  });

  it("prp fault runner-restart --seed N kills at the point the seed chooses", () => {
    const run = runPrp([
      "fault",
      "runner-restart",
      "--json",
      "--seed",
      "42",
      "--delay-ms",
      "0",
      ...PATIENT_HARNESS,
      "--out",
      out,
    ]);
    const verdict = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
    assert.equal(verdict.killPoint, FAULTS["runner-restart"]!.plan({ random: seededRandom(42) }).chosen);
    assert.equal(verdict.passed, true, JSON.stringify(verdict.checks));
  });

  it("prp fault prints the seed it drew, and --at is refused for a fault without a kill point", () => {
    const run = runPrp(["fault", "none", "--delay-ms", "0", "--out", out, ...PATIENT_HARNESS]);
    assert.match(run.stdout, /seed \d+ \(repeat this run with --seed \d+\)/);
    const refused = runPrp(["fault", "socket-drop", "--at", "3"]);
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /--at names a kill point: only for crash-after-commit and crash-after-journal/);
  });

  it("prp fault refuses an unknown fault name", () => {
    const run = runPrp(["fault", "meteor-strike"]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /unknown fault "meteor-strike"/);
  });
});
