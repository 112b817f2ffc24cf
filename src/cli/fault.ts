import { resolve } from "node:path";
import { visible } from "./terminal-text.js";
import type { Command } from "commander";
import { eventLine } from "./event-line.js";
import { reportDurableRun } from "./durable-report.js";
import { targetOfScript } from "./run-target.js";
import type { FaultVerdict } from "../fault/fault-judge.js";
import { runFaultOnce } from "../fault/fault-run.js";
import { FAULTS } from "../fault/faults.js";
import {
  HARNESS_READY_HELP,
  harnessReadyArgs,
  parseNonNegativeInt,
  parsePositiveInt,
  parseProtocolVersion,
  parseSeed,
} from "./options.js";
import { drawSeed } from "../fault/seeded-random.js";
import { scriptFromOption } from "./script-option.js";

export interface FaultRunOptions {
  script?: string;
  json?: boolean;
  delayMs?: number;
  seed?: number;
  at?: number;
  harnessReadyMs?: number;
  protocolMax?: number;
  out: string;
}

/** Runs one durable run with a fault injected; prints the run and the verdict; 0 when the verdict passed. */
export async function runFault(program: Command, name: string, opts: FaultRunOptions, live: boolean): Promise<number> {
  const fault = FAULTS[name];
  if (!fault)
    return program.error(`unknown fault "${name}"; one of: ${Object.keys(FAULTS).join(", ")}`, { exitCode: 2 });
  const takingAt = Object.keys(FAULTS).filter((n) => FAULTS[n]!.takesAt);
  if (opts.at !== undefined && !fault.takesAt)
    return program.error(`--at names a kill point: only for ${takingAt.join(" and ")}`, { exitCode: 2 });
  const script = scriptFromOption(program, opts.script ?? fault.script ?? "happy-path");
  const unfit = fault.refusesScript?.(script.script);
  if (unfit) return program.error(unfit, { exitCode: 2 });
  const seed = opts.seed ?? drawSeed();
  const show = (line: string) => {
    if (!opts.json) console.log(visible(line));
  };
  show(`fault ${name}: ${fault.describe}`);
  show(`  seed ${seed} (repeat this run with --seed ${seed})`);
  const { plan, facts, verdict } = await runFaultOnce({
    fault,
    script,
    seed,
    ...(opts.at !== undefined ? { at: opts.at } : {}),
    dir: resolve(opts.out, "faults", name),
    ...(opts.delayMs !== undefined ? { delayMs: opts.delayMs } : {}),
    runnerArgs: harnessReadyArgs(opts.harnessReadyMs),
    ...(opts.protocolMax !== undefined ? { protocolVersion: opts.protocolMax } : {}),
    onCommitted: (event) => {
      if (live) show(eventLine(event));
    },
    note: (text) => show(`  ! ${text}`),
  });
  if (plan.chosen) show(`  kill point      ${plan.chosen}`);
  reportDurableRun(facts, targetOfScript(script), false, show);
  if (opts.json)
    console.log(JSON.stringify({ fault: name, seed, ...(plan.chosen ? { killPoint: plan.chosen } : {}), ...verdict }));
  else showVerdict(verdict, show);
  return verdict.passed ? 0 : 1;
}

function showVerdict(verdict: FaultVerdict, show: (line: string) => void): void {
  const summary: Record<string, string> = {
    script: `${verdict.scriptEvents.delivered} of ${verdict.scriptEvents.expected} script events reached the host`,
    sequence: `${verdict.committedEvents} events, ${verdict.repeatedCallbacks} repeated callback(s)`,
    "once-per-run": `at most ${verdict.commandEffects} effect per command`,
    outbox: `peak ${verdict.peakOutboxBytes} bytes (the runner's own record)`,
  };
  show(`  verdict         ${verdict.passed ? "PASS" : "FAIL"}`);
  for (const c of verdict.checks) {
    show(`    ${c.check.padEnd(13)} ${c.passed ? "PASS" : "FAIL"}${summary[c.check] ? `  ${summary[c.check]}` : ""}`);
    for (const reason of c.reasons) show(`      ${reason}`);
  }
}

const JUDGE_HELP = `
The verdict is judged from what the host's onCommittedEvent received, not from the runner's
counters:
  script        every harness event the script plays (session.started, the executing phase,
                turn.started, each event step, requests, resolutions, interrupts, the first
                result) arrives once and in script order, matched by event type, the harness's
                item id and payload (coalesced deltas count as the deltas whose texts they join);
                when the fault cuts the harness short, the ones that arrived are a prefix with
                no hole
  sequence      sourceSeq runs 1..N with no gap, one sourceEventId per sourceSeq, a redelivered
                event has the same content, and the authority's cursor stands at N
  terminal      exactly one run.terminal and it is the last event (none for revoke, suspend)
  once-per-run  workspace.ready, session.starting, turn.submitted, harness.starting at most once
  goals         none on v1; on v2 and later (--protocol-max), the goals the events report are the
                script's in order (the same goal reported again counts once), the capability and
                a goal snapshot follow every open and resume, and a harness restart keeps the goal
  fault         what the fault itself must show (its events, the runner's exit, the kill point
                reached, its own check when it plays its own script)
  outbox        the peak outbox the runner recorded in its state file stays under the limit (the
                runner's own record: a bound, not independent evidence)
  secrets       no bootstrap ticket in any state file, runner log or committed event
  processes     no process of the run is alive after it, read from /proc: nothing working in
                the run's directory (runners, harnesses, the workers they leave), in a runner's
                or a reported harness's group, or an orphan guard a runner started`;

export function registerFault(program: Command): void {
  program
    .command("fault")
    .description(
      "run a durable run with one fault injected and judge the host's record against the script: nothing lost, nothing twice, one terminal last, no secret",
    )
    .argument("<name>", `one of: ${Object.keys(FAULTS).join(", ")}`)
    .option(
      "--json",
      "print only one closing JSON line: {fault, seed, killPoint?, passed, scriptEvents, committedEvents, repeatedCallbacks, commandEffects, peakOutboxBytes, secretsFound, checks}",
    )
    .option("--script <name|file>", "the fake harness script (default: the fault's own, else happy-path)")
    .option("--delay-ms <n>", "use this delay for every delay step of the script", parseNonNegativeInt)
    .option(
      "--seed <n>",
      "seed every random choice (the kill point); without it a seed is drawn and printed",
      parseSeed,
    )
    .option(
      "--at <n>",
      "crash-after-commit: the event, crash-after-journal: the command after which the runner kills itself; a point past the run's last one fails the verdict (the kill point was not reached)",
      parsePositiveInt,
    )
    .option("--harness-ready-ms <n>", HARNESS_READY_HELP, parsePositiveInt)
    .option(
      "--protocol-max <n>",
      "the run's protocol version, 1-3 (default 1): on 2 and 3 the verdict also judges the session goal through the fault",
      parseProtocolVersion,
    )
    .option("--out <dir>", "where fault runs keep their state: <dir>/faults/<name>/<runId>/", ".prp")
    .addHelpText(
      "after",
      `\nFaults:\n${Object.entries(FAULTS)
        .map(([n, f]) => `  ${n.padEnd(20)} ${f.describe}`)
        .join(
          "\n",
        )}\n${JUDGE_HELP}\n\nExit status: 0 when every check passes.\n\nExamples:\n  prp fault socket-drop\n  prp fault runner-restart --seed 42 --json\n  prp fault crash-after-commit --at 12\n  prp fault none --script many-items`,
    )
    .action(async (name: string, opts: FaultRunOptions) => {
      process.exitCode = await runFault(program, name, opts, false);
    });
}
