import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { DurableRunFacts } from "../../src/fault/durable-run.js";
import { judgeFault } from "../../src/fault/fault-judge.js";
import { runFaultOnce } from "../../src/fault/fault-run.js";
import { failing, renumbered } from "./judge-records.js";
import { FAULTS } from "../../src/fault/faults.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { loadedScript as script, PATIENT_HARNESS } from "../support/scripts.js";

const at = (events: PrpEvent[], type: string, from = 0): number => {
  const i = events.findIndex((e, j) => j >= from && e.eventType === type);
  assert.ok(i >= 0, `the record has ${type} after #${from}`);
  return i;
};

describe("the fault judge follows the session goal through a fault on v3 (goal-judge.ts)", () => {
  let out: string;
  let restarted: DurableRunFacts;
  let killed: DurableRunFacts;
  const goals = script("goals");
  before(async () => {
    out = mkdtempSync(join(tmpdir(), "prp-goal-judge-"));
    restarted = (
      await runFaultOnce({
        fault: FAULTS["harness-restart"]!,
        script: goals,
        seed: 1,
        dir: out,
        protocolVersion: 3,
        runnerArgs: PATIENT_HARNESS,
      })
    ).facts;
    killed = (
      await runFaultOnce({
        fault: FAULTS["runner-restart"]!,
        script: goals,
        seed: 5,
        dir: out,
        delayMs: 0,
        protocolVersion: 3,
        runnerArgs: PATIENT_HARNESS,
      })
    ).facts;
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  const judge = (facts: DurableRunFacts, fault = "harness-restart") => judgeFault(FAULTS[fault]!, facts, goals.script);

  it("passes a harness restart and a runner restart on v3: after the harness restart the runner reports the capability and the goal the first harness left", () => {
    assert.equal(restarted.run?.protocolVersion, 3);
    assert.deepEqual(failing(judge(restarted)), {});
    const e = restarted.events;
    const resumed = at(e, "session.reconciled");
    const before = e
      .slice(0, resumed)
      .filter((x) => x.eventType === "session.goal.updated")
      .at(-1);
    const snapshot = e[at(e, "session.goal.snapshot", resumed)]!;
    assert.ok(before, "the first harness reported a goal before it was killed");
    assert.deepEqual(snapshot.payload.goal, before.payload.goal, "the snapshot after the resume is the goal before it");
    assert.ok(at(e, "session.capabilities.updated", resumed) < e.indexOf(snapshot));
    assert.equal(killed.runnerExits[0]?.signal, "SIGKILL", "the kill point was reached");
    assert.deepEqual(failing(judge(killed, "runner-restart")), {});
  });

  it("fails when the snapshot after the resume is missing", () => {
    const events = [...restarted.events];
    events.splice(at(events, "session.goal.snapshot", at(events, "session.reconciled")), 1);
    const reconciled = events[at(events, "session.reconciled")]!;
    const found = failing(judge(renumbered(restarted, events))).goals!;
    assert.equal(
      found[0],
      `missing: session.goal.snapshot after session.reconciled at sourceSeq ${reconciled.sourceSeq}`,
    );
    assert.match(
      found[1]!,
      /^goal lost across the harness restart/,
      "the next goal reported is not the one before the restart either",
    );
  });

  it("fails when the goal after the resume is not the goal before it", () => {
    const events = [...restarted.events];
    const i = at(events, "session.goal.snapshot", at(events, "session.reconciled"));
    events[i] = { ...events[i]!, payload: { goal: null } };
    const [goalsCheck] = failing(judge(restarted)).goals ?? [];
    assert.equal(goalsCheck, undefined, "the unmodified record passes");
    const found = failing(judge({ ...restarted, events })).goals!;
    assert.match(
      found[0]!,
      /^goal lost across the harness restart at sourceSeq \d+: .*Make the test suite pass.* before, none after/,
    );
    assert.match(found.at(-1)!, /^the goals reported are not the script's/);
  });

  it("fails on a lost, altered or stale goal event", () => {
    const paused = (e: PrpEvent) =>
      e.eventType === "session.goal.updated" && (e.payload.goal as { status?: string }).status === "paused";
    const lost = restarted.events.filter((e) => !paused(e));
    assert.match(
      failing(judge(renumbered(restarted, lost))).goals![0]!,
      /not the script's: reported none → .*"active".* → .*"completed"/,
    );
    const altered = restarted.events.map((e) =>
      paused(e) ? { ...e, payload: { goal: { ...(e.payload.goal as object), objective: "Something else" } } } : e,
    );
    assert.match(failing(judge({ ...restarted, events: altered })).goals![0]!, /Something else/);
    const stale = [...restarted.events];
    stale.splice(stale.length - 1, 0, restarted.events.find(paused)!);
    assert.match(failing(judge(renumbered(restarted, stale))).goals![0]!, /not the script's/);
  });

  it("fails on any goal event in a v1 run", () => {
    const v1 = { ...restarted, run: { ...restarted.run!, protocolVersion: 1 } };
    const found = failing(judge(v1)).goals!;
    assert.ok(
      found.length > 0 &&
        found.every((r) => /^unexpected: session\.(goal|capabilities)\.\S+ at sourceSeq \d+ on a v1 run$/.test(r)),
      found.join("\n"),
    );
  });
});
