import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { join } from "node:path";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { scenariosDir } from "../../src/harness/script-file.js";
import { LocalRunnerClient } from "../../src/runner/local-client.js";
import { AT } from "../contract/samples.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";
import { FUZZ_SEED, fuzz, hostileString, mutatedText, mutatedValue, type Json } from "./support.js";

/** What one local run left: its stream, its exit, its stderr, and what still lives of it. */
export interface LocalRunRecord {
  events: PrpEvent[];
  badLines: string[];
  exitCode: number | null;
  signal: string | null;
  stderr: string[];
  survivors: number[];
}

/**
 * The local runner's promise for any input: every line it writes is a stream record, the
 * events count from 1 without a gap, exactly one run.terminal and it comes last, it exits 0 by
 * itself with no stack trace, and nothing of the run is left alive.
 */
export function judgeLocalRun(run: LocalRunRecord): string[] {
  const problems: string[] = [];
  if (run.badLines.length > 0)
    problems.push(`${run.badLines.length} line(s) that are not stream records: ${run.badLines[0]!.slice(0, 120)}`);
  run.events.forEach((e, i) => {
    if (e.sourceSeq !== i + 1) problems.push(`event ${i + 1} has sourceSeq ${e.sourceSeq}`);
  });
  const terminals = run.events.filter((e) => e.eventType === "run.terminal").length;
  if (terminals !== 1) problems.push(`${terminals} run.terminal events`);
  else if (run.events.at(-1)!.eventType !== "run.terminal")
    problems.push(`the last event is ${run.events.at(-1)!.eventType}, after the terminal`);
  if (run.exitCode !== 0 || run.signal !== null) problems.push(`exit ${run.exitCode ?? run.signal}`);
  const trace = run.stderr.find((line) => /^\s+at .+:\d+:\d+\)?$/.test(line) || /Uncaught|unhandled/i.test(line));
  if (trace !== undefined) problems.push(`a stack trace on stderr: ${trace.trim()}`);
  if (run.survivors.length > 0) problems.push(`left alive: ${describeProcesses(run.survivors)}`);
  return problems;
}

const TYPES = [
  "run.prepare",
  "session.open",
  "turn.start",
  "turn.interrupt",
  "turn.steer",
  "request.resolve",
  "run.cancel",
  "runner.drain",
] as const;
const commandOf = (seq: number, type: string): Record<string, Json> => ({
  schema: "paperclip.prp.command.v1",
  commandId: `command_fuzz_${seq}`,
  controllerSeq: seq,
  type,
  issuedAt: AT,
  payload: type === "turn.start" ? { text: "go" } : {},
});

type Step =
  { kind: "valid"; type: string } | { kind: "mutated"; type: string; pick: number } | { kind: "garbage"; text: string };
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...TYPES).map((type) => ({ kind: "valid", type }) as Step) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom(...TYPES), fc.nat())
      .map(([type, pick]) => ({ kind: "mutated", type, pick }) as Step),
  },
  { weight: 1, arbitrary: fc.oneof(hostileString, fc.json()).map((text) => ({ kind: "garbage", text }) as Step) },
);

/** The command lines of a case: valid commands in controllerSeq order, some mutated, some garbage. */
function linesOf(steps: Step[]): string[] {
  let seq = 0;
  return steps.map((s) => {
    if (s.kind === "garbage") return s.text.replace(/\n/g, " ");
    const command = commandOf(++seq, s.type);
    if (s.kind === "valid") return JSON.stringify(command);
    // A mutation drawn deterministically from the case's own number, so the case replays from its seed.
    const arbitrary = s.pick % 2 === 0 ? mutatedValue(command).map((v) => JSON.stringify(v)) : mutatedText(command);
    return fc.sample(arbitrary, { seed: s.pick, numRuns: 1 })[0]!.replace(/\n/g, " ");
  });
}

let runs = 0;
async function runLocal(lines: string[], script: string): Promise<LocalRunRecord> {
  const events: PrpEvent[] = [];
  const badLines: string[] = [];
  const client = new LocalRunnerClient({
    runId: `run_fuzz_${++runs}`,
    sessionId: "session_fuzz",
    runnerId: "runner_fuzz",
    scriptPath: join(scenariosDir(), `${script}.json`),
    delayMs: 0,
    extraArgs: PATIENT_HARNESS,
    onEvent: (e) => events.push(e),
    onReceipt: () => {},
    onBadLine: (l) => badLines.push(l),
  });
  for (const line of lines) client.sendRaw(line);
  client.close();
  let exit;
  try {
    exit = await Promise.race([
      client.exited(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("the runner did not exit within 60 s")), 60_000).unref(),
      ),
    ]);
  } catch (err) {
    await client.terminate();
    throw err;
  }
  const harness = events.find((e) => e.eventType === "harness.ready")?.payload as { pid?: number } | undefined;
  const groups = [client.pid, ...(harness?.pid ? [harness.pid] : [])];
  const alive = () => groups.flatMap((g) => liveGroupMembers(g));
  // The harness group is ended by the runner before it exits; allow its last members to be reaped.
  await until(
    () => alive().length === 0,
    () => `the run's processes to end: ${describeProcesses(alive())}`,
    5_000,
  ).catch(() => {});
  return {
    events,
    badLines,
    exitCode: exit.exitCode,
    signal: exit.signal,
    stderr: client.stderrTail(),
    survivors: alive(),
  };
}

describe(`prp-runnerd --local fuzz (seed ${FUZZ_SEED})`, () => {
  it("random, mutated and valid command lines: no exception, exactly one terminal, nothing left running", async () => {
    const cases = fc.tuple(
      fc.array(step, { minLength: 0, maxLength: 8 }),
      fc.constantFrom("happy-path", "linger", "interactive-question"),
    );
    await fuzz(
      "runnerd --local",
      fc.asyncProperty(cases, async ([steps, script]) => {
        const lines = linesOf(steps);
        const problems = judgeLocalRun(await runLocal(lines, script));
        assert.deepEqual(problems, [], `script ${script}, lines:\n${lines.map((l) => l.slice(0, 300)).join("\n")}`);
      }),
      30,
      120_000,
    );
  });

  it("the judge fails a run with two terminals, a gap, an event after the terminal, a stack trace, a non-zero exit or a survivor", async () => {
    const good = await runLocal(
      [
        JSON.stringify(commandOf(1, "run.prepare")),
        JSON.stringify(commandOf(2, "session.open")),
        JSON.stringify(commandOf(3, "turn.start")),
      ],
      "happy-path",
    );
    assert.deepEqual(judgeLocalRun(good), []);
    const terminal = good.events.at(-1)!;
    assert.equal(terminal.eventType, "run.terminal");
    const mutants: [string, LocalRunRecord, RegExp][] = [
      [
        "a second terminal",
        { ...good, events: [...good.events, { ...terminal, sourceSeq: terminal.sourceSeq + 1 }] },
        /2 run.terminal/,
      ],
      ["a deleted event", { ...good, events: good.events.filter((_, i) => i !== 2) }, /has sourceSeq/],
      [
        "an event after the terminal",
        { ...good, events: [...good.events, { ...good.events[0]!, sourceSeq: terminal.sourceSeq + 1 }] },
        /after the terminal/,
      ],
      ["no terminal", { ...good, events: good.events.slice(0, -1) }, /0 run.terminal/],
      ["a stack trace", { ...good, stderr: ["TypeError: x", "    at handleLine (file:///a.js:1:2)"] }, /stack trace/],
      ["exit 1", { ...good, exitCode: 1 }, /exit 1/],
      ["a survivor", { ...good, survivors: [process.pid] }, /left alive/],
      ["a bad line", { ...good, badLines: ["{"] }, /not stream records/],
    ];
    for (const [what, record, expected] of mutants) assert.match(judgeLocalRun(record).join("; "), expected, what);
  });
});
