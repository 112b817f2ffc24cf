import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { PrpEvent } from "../contract/kinds.js";
import { parseCrashPoint } from "./runner-crash.js";
import type { Script } from "../harness/fake-harness.js";
import { scriptEmissions } from "../harness/script-emissions.js";
import { GOAL_EVENTS } from "../contract/version-gates.js";
import { goalFindings } from "./goal-judge.js";
import type { DurableRunFacts } from "./durable-run.js";
import type { Fault } from "./fault-plan.js";
import { readHostRecord } from "./host-record.js";
import { scriptDelivery } from "./script-delivery.js";

export interface CheckResult {
  check: "script" | "sequence" | "terminal" | "once-per-run" | "goals" | "fault" | "outbox" | "secrets" | "processes";
  passed: boolean;
  /** Why it failed, one finding a line; at most MAX_REASONS, then a count of the rest. */
  reasons: string[];
}

/** What a fault run shows, judged from the host's own record against the script (runtime.md §5.10). */
export interface FaultVerdict {
  passed: boolean;
  /** The harness events the script makes the runner report, and how many reached the host. */
  scriptEvents: { expected: number; delivered: number };
  /** Distinct events the host received. */
  committedEvents: number;
  repeatedCallbacks: number;
  /** The most effect events (workspace.ready, session.starting, turn.submitted) of any one command, counted in the host's record. */
  commandEffects: number;
  /** The runner's own record of its outbox peak, read from its state file: a bound, not independent evidence. */
  peakOutboxBytes: number;
  secretsFound: number;
  checks: CheckResult[];
}

/** Each opening command's effect shows as exactly one of these events. */
const EFFECT_EVENTS = ["workspace.ready", "session.starting", "turn.submitted"];
/** Events the runner reports at most once per run. */
const ONCE_PER_RUN = [...EFFECT_EVENTS, "harness.starting"];
const DEFAULT_MAX_OUTBOX_BYTES = 16 * 1024 * 1024;
const MAX_REASONS = 20;

/**
 * Judges a fault run from what the host's `onCommittedEvent` received, never from the
 * runner's counters: the script's harness events each once and in order (a prefix with no
 * hole when the fault cuts the harness short); sourceSeq 1..N with no gap, no second id for
 * a seq and no conflicting redelivery; one run.terminal and it is last (none when the fault
 * stops the runner first); the runner's once-per-run events at most once; the session goal
 * through the fault on v2 and later, and no goal event on v1 (goal-judge.ts); what the fault
 * itself must show; no bootstrap ticket in any state file, log or event; no process of the
 * run (runner, harness, its group, a worker, an orphan guard) alive after it, read from /proc.
 */
export function judgeFault(fault: Fault, facts: DurableRunFacts, script: Script): FaultVerdict {
  const record = readHostRecord(facts.events, facts.run?.ackedSourceSeq);
  const { events } = record;
  const expected = scriptEmissions(script);
  // Goal events are judged by their own check: the runner reports some of them itself, and repeats them after a resume.
  const delivery = scriptDelivery(
    expected,
    events.filter((e) => !GOAL_EVENTS.has(e.eventType)),
    { prefix: fault.cutsHarnessShort === true },
  );
  const count = (type: string) => events.filter((e) => e.eventType === type).length;
  const peakOutboxBytes = recordedPeakOutboxBytes(facts.dir);
  const maxOutboxBytes = fault.maxOutboxBytes ?? DEFAULT_MAX_OUTBOX_BYTES;
  const secrets = secretFindings(facts);
  const checks: CheckResult[] = [
    check("script", delivery.reasons),
    check("sequence", record.reasons),
    check("terminal", terminalFindings(events, fault.terminal ?? true)),
    check(
      "once-per-run",
      ONCE_PER_RUN.flatMap((type) => {
        const seqs = events.filter((e) => e.eventType === type).map((e) => e.sourceSeq);
        return seqs.length > 1 ? [`duplicate: ${type} at sourceSeq ${seqs.join(", ")}`] : [];
      }),
    ),
    check("goals", goalFindings(events, script, facts.run?.protocolVersion ?? 1, fault.cutsHarnessShort === true)),
    check("fault", faultFindings(fault, facts, events, script)),
    check(
      "outbox",
      peakOutboxBytes > maxOutboxBytes
        ? [`the runner recorded a peak outbox of ${peakOutboxBytes} bytes, over the ${maxOutboxBytes}-byte limit`]
        : [],
    ),
    check("secrets", secrets),
    check(
      "processes",
      facts.survivors.map((p) => `survivor: ${p} is alive after the run (no process of a run outlives it)`),
    ),
  ];
  return {
    passed: checks.every((c) => c.passed),
    scriptEvents: { expected: expected.length, delivered: delivery.delivered },
    committedEvents: events.length,
    repeatedCallbacks: record.repeatedCallbacks,
    commandEffects: Math.max(0, ...EFFECT_EVENTS.map(count)),
    peakOutboxBytes,
    secretsFound: secrets.length,
    checks,
  };
}

function check(name: CheckResult["check"], reasons: string[]): CheckResult {
  const shown =
    reasons.length > MAX_REASONS
      ? [...reasons.slice(0, MAX_REASONS), `… and ${reasons.length - MAX_REASONS} more`]
      : reasons;
  return { check: name, passed: reasons.length === 0, reasons: shown };
}

function terminalFindings(events: PrpEvent[], expected: boolean): string[] {
  const seqs = events.filter((e) => e.eventType === "run.terminal").map((e) => e.sourceSeq);
  if (!expected)
    return seqs.length > 0
      ? [`run.terminal at sourceSeq ${seqs.join(", ")}, though the fault stops the runner before its terminal`]
      : [];
  if (seqs.length === 0) return ["no run.terminal"];
  const out = seqs.length > 1 ? [`${seqs.length} run.terminal events, at sourceSeq ${seqs.join(", ")}`] : [];
  const last = events.at(-1)!;
  if (last.eventType !== "run.terminal") {
    const after = events.slice(events.findIndex((e) => e.eventType === "run.terminal") + 1);
    out.push(
      `terminal not last: run.terminal at sourceSeq ${seqs[0]}, then ${after.map((e) => `${e.eventType} (${e.sourceSeq})`).join(", ")}`,
    );
  }
  return out;
}

function faultFindings(fault: Fault, facts: DurableRunFacts, events: PrpEvent[], script: Script): string[] {
  const out = (fault.shows ?? [])
    .filter((type) => !events.some((e) => e.eventType === type))
    .map((type) => `missing: ${type} (the fault must show it)`);
  const exit = (e: DurableRunFacts["runnerExits"][number] | undefined) =>
    e ? String(e.exitCode ?? e.signal) : "never";
  if (fault.runnerExit !== undefined && facts.runnerExits.at(-1)?.exitCode !== fault.runnerExit)
    out.push(`the last runner exited ${exit(facts.runnerExits.at(-1))}, expected ${fault.runnerExit}`);
  const { planned, notReached } = facts.faultSteps;
  if (notReached > 0)
    out.push(
      `the fault never acted: ${notReached} of its ${planned} step(s) lie past the run's end (${events.length} events committed); a longer script gives it room`,
    );
  if (fault.killsRunner && facts.runnerExits[0]?.signal !== "SIGKILL")
    out.push(
      `the kill point was not reached: the first runner exited ${exit(facts.runnerExits[0])}${pastTheEnd(facts, events)}`,
    );
  const own = fault.script === undefined || fault.script === script.name;
  const problem = own ? fault.check?.(facts) : null;
  if (problem) out.push(problem);
  return out;
}

/** Why a crash point was never reached, when it lies past what the run had: `--at` beyond its last event or command. */
function pastTheEnd(facts: DurableRunFacts, events: PrpEvent[]): string {
  const point = parseCrashPoint(facts.crashAt);
  if (!point) return "";
  const [what, last] =
    point.point === "after-commit"
      ? ["event", events.at(-1)?.sourceSeq ?? 0]
      : ["command", facts.run?.commandCount ?? 0];
  return point.at > last ? `; ${point.point}:${point.at} is past the run's last ${what} (${last})` : "";
}

/** The runner's own record of its outbox peak, read from its state file (0 when there is none). */
function recordedPeakOutboxBytes(dir: string): number {
  const statePath = join(dir, "runner-state", "runner-state.sqlite");
  if (!existsSync(statePath)) return 0;
  const db = new Database(statePath, { readonly: true, fileMustExist: true });
  try {
    return (
      (db.prepare("SELECT peak_outbox_bytes AS p FROM runner_state WHERE id = 1").get() as { p: number } | undefined)
        ?.p ?? 0
    );
  } finally {
    db.close();
  }
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Where a bootstrap ticket shows up: a state file, a runner log or a committed event (never the ticket itself). */
function secretFindings(facts: DurableRunFacts): string[] {
  const places: Array<[string, string]> = [
    ...filesUnder(facts.dir).map((f): [string, string] => [f, readFileSync(f).toString("latin1")]),
    ["the runner logs", facts.runnerLogs.flat().join("\n")],
    ["the committed events", JSON.stringify(facts.events)],
  ];
  return facts.tickets.flatMap((ticket, i) =>
    places
      .filter(([, text]) => text.includes(ticket))
      .map(([where]) => `secret: bootstrap ticket #${i + 1} found in ${where}`),
  );
}
