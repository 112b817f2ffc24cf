import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { DurableRunFacts } from "../../src/fault/durable-run.js";
import { runFaultOnce, type FaultRun } from "../../src/fault/fault-run.js";
import { FAULTS } from "../../src/fault/faults.js";
import type { LoadedScript } from "../../src/harness/script-file.js";
import { loadedScript, PATIENT_HARNESS } from "../support/scripts.js";

/** Each run takes about 2 s; this bounds a whole sweep on a slow, shared machine. */
const SWEEP_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * What must hold of the host's committed record after any crash, beyond the judge's verdict:
 * the first runner died at its point and a replacement ran; exactly one run.terminal, with
 * nothing after it; and the authority's own cursor and terminal agree with that record.
 */
function crashFindings(run: FaultRun): string[] {
  const { facts, verdict } = run;
  const out: string[] = [];
  if (facts.runnerExits[0]?.signal !== "SIGKILL" || facts.runnerExits.length !== 2)
    out.push(`the kill point was not reached: runner exits ${JSON.stringify(facts.runnerExits)}`);
  if (!verdict.passed)
    out.push(...verdict.checks.filter((c) => !c.passed).map((c) => `${c.check}: ${c.reasons.join("; ")}`));
  const terminals = facts.events.filter((e) => e.eventType === "run.terminal");
  if (terminals.length !== 1) out.push(`${terminals.length} run.terminal events in the host's record`);
  const at = facts.events.findIndex((e) => e.eventType === "run.terminal");
  if (at >= 0 && at !== facts.events.length - 1)
    out.push(
      `after the terminal: ${facts.events
        .slice(at + 1)
        .map((e) => `${e.eventType} (${e.sourceSeq})`)
        .join(", ")}`,
    );
  const terminalSeq = terminals[0]?.sourceSeq ?? null;
  if (facts.run?.terminalSourceSeq !== terminalSeq || facts.run?.ackedSourceSeq !== terminalSeq) {
    out.push(
      `the authority's terminal is at ${facts.run?.terminalSourceSeq}, its cursor at ${facts.run?.ackedSourceSeq}; the host's terminal at ${terminalSeq}`,
    );
  }
  return out;
}

const terminalState = (facts: DurableRunFacts) =>
  (facts.events.at(-1)?.payload as { runTerminalState?: string } | undefined)?.runTerminalState;

/**
 * Issue 9, item 1: `prp fault` covers every commit point of a run. A baseline run of the
 * happy path gives the run's last event and its commands; the runner is then SIGKILLed after
 * committing each event in turn (crash-after-commit --at N) and after journaling each command
 * in turn (crash-after-journal --at N), one run at a time, each judged by the fault judge from
 * the host's record. The last point is the one the issue found: the terminal committed, not
 * sent; the replacement must deliver it and decide no second one.
 */
describe("prp fault: every commit point of a run, one SIGKILL each", () => {
  let out: string;
  let script: LoadedScript;
  let lastEvent = 0;
  let commands = 0;
  /** The crash-after-commit run at the last event, kept to show the oracle failing on a doctored copy. */
  let atTerminal: FaultRun | undefined;
  before(async () => {
    out = mkdtempSync(join(tmpdir(), "prp-every-point-"));
    script = loadedScript("happy-path");
    const baseline = await runFaultOnce({
      fault: FAULTS.none!,
      script,
      seed: 1,
      dir: join(out, "baseline"),
      delayMs: 0,
      runnerArgs: PATIENT_HARNESS,
    });
    assert.ok(baseline.verdict.passed, JSON.stringify(baseline.verdict.checks.filter((c) => !c.passed)));
    lastEvent = baseline.facts.events.at(-1)!.sourceSeq;
    commands = baseline.facts.run!.commandCount;
    assert.equal(baseline.facts.events.at(-1)!.eventType, "run.terminal");
    assert.ok(
      lastEvent > 1 && commands > 1,
      `a baseline with events and commands: ${lastEvent} events, ${commands} commands`,
    );
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  const sweep = async (
    t: { diagnostic(text: string): void },
    name: "crash-after-commit" | "crash-after-journal",
    last: number,
  ) => {
    const failures: string[] = [];
    for (let at = 1; at <= last; at++) {
      const run = await runFaultOnce({
        fault: FAULTS[name]!,
        script,
        seed: at,
        at,
        dir: join(out, name),
        delayMs: 0,
        runnerArgs: PATIENT_HARNESS,
      });
      const found = crashFindings(run);
      if (found.length > 0) failures.push(`--at ${at}: ${found.join(" | ")}`);
      t.diagnostic(
        `${name} --at ${at}: ${found.length === 0 ? "PASS" : "FAIL"}, ${run.facts.events.length} events, terminal ${terminalState(run.facts)}`,
      );
      if (name === "crash-after-commit" && at === last) atTerminal = run;
      if (name === "crash-after-commit" && at === last && found.length === 0) {
        // The terminal was committed and not sent: it is the run's one, and it says what the baseline said.
        if (terminalState(run.facts) !== "succeeded")
          failures.push(`--at ${at}: the committed terminal was replaced by a ${terminalState(run.facts)} one`);
        if (run.facts.events.some((e) => e.eventType === "runner.reconciled"))
          failures.push(`--at ${at}: the replacement reconciled a run whose terminal was committed`);
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${last} crash points failed`);
  };

  it(
    "crash-after-commit --at N for every N from 1 to the run's last event",
    { timeout: SWEEP_TIMEOUT_MS },
    async (t) => {
      await sweep(t, "crash-after-commit", lastEvent);
    },
  );

  it("crash-after-journal --at N for every command N of the run", { timeout: SWEEP_TIMEOUT_MS }, async (t) => {
    await sweep(t, "crash-after-journal", commands);
  });

  it("--at past the run's last event or command: the verdict fails and says so", async () => {
    for (const [name, at, what] of [
      [
        "crash-after-commit",
        lastEvent + 1,
        `after-commit:${lastEvent + 1} is past the run's last event (${lastEvent})`,
      ],
      [
        "crash-after-journal",
        commands + 1,
        `after-journal:${commands + 1} is past the run's last command (${commands})`,
      ],
    ] as const) {
      const run = await runFaultOnce({
        fault: FAULTS[name]!,
        script,
        seed: 1,
        at,
        dir: join(out, "past"),
        delayMs: 0,
        runnerArgs: PATIENT_HARNESS,
      });
      assert.equal(run.verdict.passed, false, name);
      assert.match(crashFindings(run)[0]!, /^the kill point was not reached: runner exits \[\{"exitCode":0/);
      assert.deepEqual(
        run.verdict.checks.filter((c) => !c.passed).map((c) => [c.check, c.reasons]),
        [["fault", [`the kill point was not reached: the first runner exited 0; ${what}`]]],
      );
    }
  });

  it("the sweep's oracle fails on a record with a second terminal, or an event after the terminal", () => {
    assert.ok(atTerminal, "the crash-after-commit sweep ran to the last event");
    const { facts } = atTerminal;
    const terminal = facts.events.at(-1)!;
    const next = (seq: number, eventType: string) =>
      ({
        ...terminal,
        eventType,
        sourceSeq: seq,
        sourceEventId: `${terminal.sourceEventId}_${seq}`,
      }) as typeof terminal;
    const doctored = (events: typeof facts.events): FaultRun => ({ ...atTerminal!, facts: { ...facts, events } });
    const two = crashFindings(doctored([...facts.events, next(terminal.sourceSeq + 1, "run.terminal")]));
    assert.ok(two.includes("2 run.terminal events in the host's record"), two.join(" | "));
    assert.ok(two.includes(`after the terminal: run.terminal (${terminal.sourceSeq + 1})`), two.join(" | "));
    const reconciled = crashFindings(doctored([...facts.events, next(terminal.sourceSeq + 1, "runner.reconciled")]));
    assert.ok(
      reconciled.includes(`after the terminal: runner.reconciled (${terminal.sourceSeq + 1})`),
      reconciled.join(" | "),
    );
  });
});
