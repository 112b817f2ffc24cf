import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { DurableRunFacts } from "../../src/fault/durable-run.js";
import { judgeFault } from "../../src/fault/fault-judge.js";
import { runFaultOnce } from "../../src/fault/fault-run.js";
import { failing, indexOf, renumbered } from "./judge-records.js";
import { FAULTS } from "../../src/fault/faults.js";
import type { Fault } from "../../src/fault/fault-plan.js";
import { scriptDelivery } from "../../src/fault/script-delivery.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { scriptEmissions } from "../../src/harness/script-emissions.js";
import { isLive } from "../support/processes.js";
import { loadedScript as script, PATIENT_HARNESS } from "../support/scripts.js";

describe("the fault judge fails on a record that lost, repeated or changed an event", () => {
  let out: string;
  let clean: DurableRunFacts;
  let crashed: DurableRunFacts;
  const happy = script("happy-path");
  before(async () => {
    out = mkdtempSync(join(tmpdir(), "prp-judge-"));
    clean = (
      await runFaultOnce({
        fault: FAULTS.none!,
        script: happy,
        seed: 1,
        dir: out,
        delayMs: 0,
        runnerArgs: PATIENT_HARNESS,
      })
    ).facts;
    // The runner kills itself after committing event 12 (item.completed item_command_1), before sending it.
    crashed = (
      await runFaultOnce({
        fault: FAULTS["crash-after-commit"]!,
        script: happy,
        seed: 1,
        at: 12,
        dir: out,
        delayMs: 0,
        runnerArgs: PATIENT_HARNESS,
      })
    ).facts;
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  const judge = (facts: DurableRunFacts, fault = "none") => judgeFault(FAULTS[fault]!, facts, happy.script);

  it("passes the unmodified records of a clean run and of a crashed one", () => {
    const v = judge(clean);
    assert.deepEqual(failing(v), {});
    assert.deepEqual(v.scriptEvents, { expected: 11, delivered: 11 });
    assert.equal(v.committedEvents, 19);
    assert.equal(v.commandEffects, 1);
    assert.equal(crashed.runnerExits[0]?.signal, "SIGKILL", "the crash point was reached");
    assert.deepEqual([clean.survivors, crashed.survivors], [[], []], "no process of either run outlived it");
    const c = judge(crashed, "crash-after-commit");
    assert.deepEqual(failing(c), {});
    assert.ok(
      c.scriptEvents.delivered >= 6 && c.scriptEvents.delivered < 11,
      `a prefix reached the host: ${c.scriptEvents.delivered}`,
    );
  });

  it("fails on a deleted event: missing from the script, a gap in the sequence", () => {
    const events = [...clean.events];
    const [gone] = events.splice(indexOf(events, "item.completed", "item_command_1"), 1);
    const v = judge({ ...clean, events });
    assert.equal(v.passed, false);
    assert.deepEqual(failing(v), {
      script: ["missing: item.completed item_command_1 (expected #6)"],
      sequence: [`gap at sourceSeq ${gone!.sourceSeq}`],
    });
  });

  it("fails on a deleted event even when the sequence was renumbered around it", () => {
    const events = [...clean.events];
    events.splice(indexOf(events, "turn.started"), 1);
    assert.deepEqual(failing(judge(renumbered(clean, events))), { script: ["missing: turn.started (expected #3)"] });
  });

  it("fails on a duplicated event, under a new sourceSeq", () => {
    const events = [...clean.events];
    const at = indexOf(events, "item.started", "item_file_1");
    events.splice(at + 1, 0, events[at]!);
    const v = judge(renumbered(clean, events));
    assert.deepEqual(failing(v), {
      script: [
        `duplicate: item.started item_file_1 at sourceSeq ${at + 2} (expected #7, first at sourceSeq ${at + 1})`,
      ],
    });
  });

  it("fails on an altered event", () => {
    const events = [...clean.events];
    const at = indexOf(events, "item.completed", "item_file_1");
    events[at] = { ...events[at]!, payload: { ...events[at]!.payload, text: "src/greeting.ts: 4 lines changed" } };
    assert.deepEqual(failing(judge({ ...clean, events })), {
      script: [`altered: item.completed item_file_1 at sourceSeq ${at + 1} (expected #8): payload text differs`],
    });
  });

  it("fails on events out of script order", () => {
    const events = [...clean.events];
    const a = indexOf(events, "item.started", "item_file_1");
    const b = indexOf(events, "item.completed", "item_file_1");
    [events[a], events[b]] = [events[b]!, events[a]!];
    assert.deepEqual(failing(judge(renumbered(clean, events))), {
      script: [`out of order: item.started item_file_1 at sourceSeq ${b + 1} (expected #7, after #8)`],
    });
  });

  it("counts a repeated callback with the same content, and fails one with other content", () => {
    const twelve = clean.events[11]!;
    const repeated = judge({ ...clean, events: [...clean.events.slice(0, 12), twelve, ...clean.events.slice(12)] });
    assert.deepEqual(failing(repeated), {});
    assert.equal(repeated.repeatedCallbacks, 1);
    const changed = { ...twelve, emittedAt: "2000-01-01T00:00:00.000Z" };
    const conflict = judge({ ...clean, events: [...clean.events.slice(0, 12), changed, ...clean.events.slice(12)] });
    assert.deepEqual(failing(conflict), {
      sequence: [`conflict: ${twelve.sourceEventId} reached the host again with other content (sourceSeq 12, then 12)`],
    });
  });

  it("fails on a second terminal, a terminal that is not last, and a second effect of one command", () => {
    const terminal = clean.events.at(-1)!;
    assert.equal(terminal.eventType, "run.terminal");
    const two = judge(renumbered(clean, [...clean.events.slice(0, -1), terminal, terminal]));
    assert.deepEqual(failing(two), { terminal: ["2 run.terminal events, at sourceSeq 19, 20"] });
    const early = judge(renumbered(clean, [...clean.events.slice(0, -2), terminal, clean.events.at(-2)!]));
    assert.deepEqual(failing(early), {
      terminal: ["terminal not last: run.terminal at sourceSeq 18, then harness.exited (19)"],
    });
    const ready = clean.events[indexOf(clean.events, "workspace.ready")]!;
    const twice = judge(renumbered(clean, [...clean.events.slice(0, 2), ready, ...clean.events.slice(2)]));
    assert.deepEqual(failing(twice), { "once-per-run": ["duplicate: workspace.ready at sourceSeq 2, 3"] });
    assert.equal(twice.commandEffects, 2);
  });

  it("fails on a process of the run alive after it", () => {
    assert.deepEqual(failing(judge({ ...clean, survivors: ["4242 sleep 60"] })), {
      processes: ["survivor: 4242 sleep 60 is alive after the run (no process of a run outlives it)"],
    });
  });

  it("fails on a real survivor: a process left working in the run's directory, found through /proc", async () => {
    let leftPid: number | undefined;
    const leaves: Fault = {
      describe: "leaves a sleep working in the run's directory",
      plan: () => ({
        steps: [
          {
            afterEvents: 3,
            act: async (ctx) => {
              const child = spawn("sleep", ["60"], { cwd: ctx.dir, detached: true, stdio: "ignore" });
              child.unref();
              leftPid = child.pid;
            },
          },
        ],
      }),
    };
    try {
      const { verdict } = await runFaultOnce({
        fault: leaves,
        script: happy,
        seed: 1,
        dir: out,
        delayMs: 0,
        runnerArgs: PATIENT_HARNESS,
      });
      assert.ok(leftPid !== undefined && isLive(leftPid), "the step ran and its sleep is alive");
      assert.deepEqual(Object.keys(failing(verdict)), ["processes"]);
      assert.deepEqual(verdict.checks.find((c) => c.check === "processes")!.reasons, [
        `survivor: ${leftPid} sleep 60 is alive after the run (no process of a run outlives it)`,
      ]);
    } finally {
      if (leftPid !== undefined && isLive(leftPid)) process.kill(leftPid, "SIGKILL");
    }
  });

  it("fails a fault that never acted: its point lay past the run's end", async () => {
    let acted = false;
    const late: Fault = {
      describe: "acts after more events than the run has",
      plan: () => ({ steps: [{ afterEvents: 10_000, act: async () => void (acted = true) }] }),
    };
    const { facts, verdict } = await runFaultOnce({
      fault: late,
      script: happy,
      seed: 1,
      dir: out,
      delayMs: 0,
      runnerArgs: PATIENT_HARNESS,
    });
    assert.equal(acted, false);
    assert.deepEqual(facts.faultSteps, { planned: 1, notReached: 1 });
    assert.deepEqual(failing(verdict), {
      fault: [
        `the fault never acted: 1 of its 1 step(s) lie past the run's end (${facts.events.length} events committed); a longer script gives it room`,
      ],
    });
    // The record of a run whose fault did act passes.
    assert.deepEqual(clean.faultSteps, { planned: 0, notReached: 0 });
    assert.deepEqual(failing(judge({ ...facts, faultSteps: { planned: 1, notReached: 0 } })), {});
  });

  it("a run cut short passes as a prefix only when the fault cuts the harness short, and never with a hole", () => {
    const cut = renumbered(clean, [
      ...clean.events.slice(0, indexOf(clean.events, "item.started", "item_file_1")),
      clean.events.at(-1)!,
    ]);
    assert.deepEqual(failing(judge(cut, "crash-after-commit")), {
      fault: ["the kill point was not reached: the first runner exited 0"],
    });
    assert.deepEqual(failing(judge(cut, "none")).script?.slice(0, 2), [
      "missing: item.started item_file_1 (expected #7)",
      "missing: item.completed item_file_1 (expected #8)",
    ]);
    const events = [...crashed.events];
    events.splice(indexOf(events, "item.delta", "item_command_1"), 1);
    assert.deepEqual(failing(judge(renumbered(crashed, events), "crash-after-commit")), {
      script: ["missing: item.delta item_command_1 (expected #5)"],
    });
  });
});

describe("scriptDelivery takes a coalesced delta as the deltas whose texts it joins", () => {
  const pressure = script("storage-pressure").script;
  const expected = scriptEmissions(pressure);
  const event = (sourceSeq: number, eventType: string, payload: Record<string, unknown>): PrpEvent =>
    ({ sourceSeq, eventType, payload, providerItemId: "item_stream_1" }) as unknown as PrpEvent;
  const opening = expected
    .slice(0, 3)
    .map((e, i) => ({ sourceSeq: i + 1, eventType: e.eventType, payload: e.payload }) as unknown as PrpEvent);
  const deltas = expected.filter((e) => e.eventType === "item.delta").map((e) => e.payload.text as string);
  const started = event(4, "item.started", expected[3]!.payload);

  it("passes 250 deltas carried by three events, and fails when a carried text is wrong", () => {
    const carried = [deltas.slice(0, 100), deltas.slice(100, 101), deltas.slice(101)].map((texts, i) =>
      event(
        5 + i,
        "item.delta",
        texts.length === 1 ? { text: texts[0] } : { text: texts.join(""), coalescedDeltas: texts.length },
      ),
    );
    const ok = scriptDelivery(expected, [...opening, started, ...carried], { prefix: true });
    assert.deepEqual(ok, { delivered: 4 + 250, reasons: [] });
    const wrong = {
      ...carried[2]!,
      payload: { ...carried[2]!.payload, text: deltas.slice(101).reverse().join("") },
    } as PrpEvent;
    const rest = expected.slice(4 + 250).map(
      (e, i) =>
        ({
          sourceSeq: 8 + i,
          eventType: e.eventType,
          payload: e.payload,
          ...(e.itemId ? { providerItemId: e.itemId } : {}),
        }) as unknown as PrpEvent,
    );
    assert.deepEqual(
      scriptDelivery(expected, [...opening, started, ...carried, ...rest], { prefix: false }).reasons,
      [],
    );
    assert.deepEqual(
      scriptDelivery(expected, [...opening, started, carried[0]!, carried[1]!, wrong, ...rest], { prefix: false })
        .reasons,
      ["altered: item.delta item_stream_1 at sourceSeq 7 (expected #106): payload text differs"],
    );
  });
});
