import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { DurableRunFacts } from "../../src/fault/durable-run.js";
import { runFaultOnce } from "../../src/fault/fault-run.js";
import { FAULTS } from "../../src/fault/faults.js";
import { loadedScript, PATIENT_HARNESS } from "../support/scripts.js";
import { failing, indexOf } from "./judge-records.js";
import { runPrp } from "./run-cli.js";

const fault = FAULTS["harness-restart"]!;

describe("harness-restart kills the harness while it waits, whatever the script's length", () => {
  let out: string;
  let facts: DurableRunFacts;
  before(async () => {
    out = mkdtempSync(join(tmpdir(), "prp-harness-restart-"));
    // goals on v1 is a short run: a kill after a fixed count of events landed after its harness had ended.
    const run = await runFaultOnce({
      fault,
      script: loadedScript("goals"),
      seed: 1,
      dir: out,
      runnerArgs: PATIENT_HARNESS,
    });
    facts = run.facts;
    assert.deepEqual(failing(run.verdict), {}, "the verdict passes");
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it("the kill lands after the first script event, before the script goes on past its first delay", () => {
    const e = facts.events;
    const exited = indexOf(e, "harness.exited");
    assert.equal(
      (e[exited]!.payload as { signal?: string }).signal,
      "SIGKILL",
      "the first harness was alive to be killed",
    );
    assert.ok(indexOf(e, "item.started", "item_command_1") < exited, "killed after the event before the delay");
    assert.ok(exited < indexOf(e, "item.completed", "item_command_1"), "killed before the event after the delay");
    assert.equal(e.filter((x) => x.eventType === "harness.ready").length, 2);
  });

  it("takes a script with a delay after a reported event, and refuses one without, before any run", () => {
    for (const name of ["happy-path", "goals", "many-items"])
      assert.equal(fault.refusesScript!(loadedScript(name).script), null, name);
    assert.match(
      fault.refusesScript!(loadedScript("error").script) ?? "",
      /needs a script whose harness reports an event and then waits .* "error" has none/,
    );
    const cli = runPrp(["fault", "harness-restart", "--script", "error", "--out", out]);
    assert.equal(cli.status, 2, cli.stderr);
    assert.match(cli.stderr, /"error" has none/);
  });
});
