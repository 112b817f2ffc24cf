import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { runPrp } from "./run-cli.js";
import { PATIENT_HARNESS } from "../support/scripts.js";

const SECRETS = ["fake-access-token", "acct-fake-a", "acct-fake-b", "auth.json"];
const line = (revision: number) =>
  `auth.credentials.updated Credentials updated: fake/harness-auth revision ${revision} (credential_store)`;

/** What people see of the credential observer: live lines in prp run and prp demo, the session in prp replay. */
describe("credential revisions shown to people", () => {
  const out = mkdtempSync(join(tmpdir(), "prp-credentials-cli-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  it("prp run shows each revision as it happens, and no secret", () => {
    const run = runPrp(["run", "--script", "credentials-refresh", "--out", out, ...PATIENT_HARNESS]);
    assert.equal(run.status, 0, run.stderr);
    assert.ok(run.stdout.includes(line(1)) && run.stdout.includes(line(2)), run.stdout);
    assert.deepEqual(
      SECRETS.filter((s) => (run.stdout + run.stderr).includes(s)),
      [],
    );
  });

  it("prp run of a harness that changes no credential shows none (the twin)", () => {
    const run = runPrp(["run", "--script", "happy-path", "--delay-ms", "0", "--out", out, ...PATIENT_HARNESS]);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.includes("auth.credentials.updated"), false, run.stdout);
  });

  it("prp replay shows the binding's revision in the session", () => {
    const run = runPrp(["run", "--json", "--script", "credentials-refresh", "--out", out, ...PATIENT_HARNESS]);
    assert.equal(run.status, 0, run.stderr);
    const replay = runPrp(["replay", "--events", "-"], { input: run.stdout });
    assert.equal(replay.status, 0, replay.stderr);
    assert.match(replay.stdout, /credentials\s+fake\/harness-auth revision 2 \(credential_store\)/);
    assert.equal(replay.stdout.match(/auth\.credentials\.updated/g)?.length, 2, replay.stdout);
  });

  it("prp demo shows each revision as the authority commits it", () => {
    const demo = runPrp(["demo", "--script", "credentials-refresh", "--out", out, ...PATIENT_HARNESS]);
    assert.equal(demo.status, 0, demo.stderr);
    assert.ok(demo.stdout.includes(line(1)) && demo.stdout.includes(line(2)), demo.stdout);
    assert.deepEqual(
      SECRETS.filter((s) => demo.stdout.includes(s)),
      [],
    );
  });
});
