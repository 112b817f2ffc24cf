import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { bundleFileProblems, type NativeExecutionBundle } from "../../src/bundle/native-execution.js";
import { decode } from "../../src/contract/index.js";
import { FAULTS } from "../../src/cli/faults.js";
import { runPrp } from "./run-cli.js";

describe("durable runs over the encrypted WebSocket", () => {
  let out: string;
  before(() => {
    out = mkdtempSync(join(tmpdir(), "prp-durable-"));
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it("prp demo --json: the happy path ends succeeded, every event committed once, with a valid bundle and private state", () => {
    const run = runPrp(["demo", "--json", "--delay-ms", "0", "--out", out]);
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
  });

  for (const name of Object.keys(FAULTS)) {
    it(`prp fault ${name} --json passes: nothing acknowledged lost, nothing twice, one effect per command, no secret`, () => {
      const run = runPrp(["fault", name, "--json", "--delay-ms", "0", "--out", out]);
      const verdict = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
      assert.deepEqual(Object.keys(verdict), ["fault", "passed", "acknowledgedLost", "duplicateLogicalEvents", "commandEffects", "peakOutboxBytes", "secretsFound"]);
      assert.deepEqual(verdict, { ...verdict, fault: name, passed: true, acknowledgedLost: 0, duplicateLogicalEvents: 0, secretsFound: 0 }, run.stderr);
      assert.ok(verdict.commandEffects <= 1, "no command has two effects (a crash right after journaling leaves it with none)");
      assert.equal(run.status, 0);
    });
  }

  it("prp fault refuses an unknown fault name", () => {
    const run = runPrp(["fault", "meteor-strike"]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /unknown fault "meteor-strike"/);
  });
});
