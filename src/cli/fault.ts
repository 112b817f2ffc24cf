import { resolve } from "node:path";
import type { Command } from "commander";
import { timelineSummary } from "../reducer/timeline-summary.js";
import { reportDurableRun } from "./demo.js";
import { runDurable } from "./durable-run.js";
import { FAULTS, judgeFault } from "./faults.js";
import { parseNonNegativeInt } from "./options.js";
import { scriptFromOption } from "./script-option.js";

export interface FaultRunOptions {
  script?: string;
  json?: boolean;
  delayMs?: number;
  out: string;
}

/** Runs one durable run with a fault injected; prints the run and the verdict; 0 when the verdict passed. */
export async function runFault(program: Command, name: string, opts: FaultRunOptions, live: boolean): Promise<number> {
  const fault = FAULTS[name];
  if (!fault) return program.error(`unknown fault "${name}"; one of: ${Object.keys(FAULTS).join(", ")}`, { exitCode: 2 });
  const script = scriptFromOption(program, opts.script ?? fault.script ?? "happy-path");
  const show = (line: string) => {
    if (!opts.json) console.log(line);
  };
  show(`fault ${name}: ${fault.describe}`);
  const facts = await runDurable({
    script,
    dir: resolve(opts.out, "faults", name),
    faults: fault.steps(),
    ...(fault.runnerArgs ? { runnerArgs: fault.runnerArgs } : {}),
    ...(fault.crashAt ? { crashAt: fault.crashAt() } : {}),
    ...(fault.relaunchAfterLeaseExpiry ? { relaunchAfterLeaseExpiry: true } : {}),
    ...(fault.delayMs !== undefined ? { delayMs: fault.delayMs } : opts.delayMs !== undefined ? { delayMs: opts.delayMs } : {}),
    onCommitted: (event) => {
      if (live) show(`  ${String(event.sourceSeq).padStart(3)}  ${event.eventType.padEnd(24)} ${timelineSummary(event, new Map())}`);
    },
    note: (text) => {
      if (!opts.json) show(`  ! ${text}`);
    },
  });
  reportDurableRun(facts, script, false, show);
  const verdict = judgeFault(name, facts);
  if (opts.json) console.log(JSON.stringify(verdict));
  else {
    show(`  verdict         ${verdict.passed ? "PASS" : "FAIL"}: ${verdict.acknowledgedLost} acknowledged events lost, ${verdict.duplicateLogicalEvents} duplicate logical events, at most ${verdict.commandEffects} effect per command, peak outbox ${verdict.peakOutboxBytes} bytes, ${verdict.secretsFound} secrets found`);
  }
  return verdict.passed ? 0 : 1;
}

export function registerFault(program: Command): void {
  program
    .command("fault")
    .description("run a durable run with one fault injected and check that nothing acknowledged is lost, nothing happens twice and no secret leaks")
    .argument("<name>", `one of: ${Object.keys(FAULTS).join(", ")}`)
    .option("--json", "print only one closing JSON line: {fault, passed, acknowledgedLost, duplicateLogicalEvents, commandEffects, peakOutboxBytes, secretsFound}")
    .option("--script <name|file>", "the fake harness script (default: the fault's own, else happy-path)")
    .option("--delay-ms <n>", "use this delay for every delay step of the script", parseNonNegativeInt)
    .option("--out <dir>", "where fault runs keep their state: <dir>/faults/<name>/<runId>/", ".prp")
    .addHelpText("after", `\nFaults:\n${Object.entries(FAULTS).map(([n, f]) => `  ${n.padEnd(18)} ${f.describe}`).join("\n")}\n\nExit status: 0 when the checks pass.\n\nExamples:\n  prp fault socket-drop\n  prp fault runner-restart --json`)
    .action(async (name: string, opts: FaultRunOptions) => {
      process.exitCode = await runFault(program, name, opts, false);
    });
}
