import { join } from "node:path";
import { terminalSummary } from "./stop-line.js";
import { bundleRefusal, terminalOf, writeNativeExecutionBundle } from "../bundle/native-execution.js";
import { reduceEvents } from "../reducer/index.js";
import type { DurableRunFacts } from "../fault/durable-run.js";
import type { RunTarget } from "./run-target.js";
import { visibleLines } from "./terminal-text.js";

/** What the closing report reads of a run: prp demo's own run, or a run of prp demo --console's worker. */
export type ReportedRun = Pick<DurableRunFacts, "runId" | "dir" | "events" | "run" | "runnerExits" | "runnerLogs">;

/** The closing report of a durable run: states, result, session, transport counters, bundle. */
export function reportDurableRun(
  facts: ReportedRun,
  target: RunTarget,
  json: boolean,
  show: (line: string) => void,
): number {
  const { events } = facts;
  if (!events.some((e) => e.eventType === "run.terminal")) {
    process.stderr.write(
      `prp: no run.terminal was committed; the runner exited (${facts.runnerExits.map((e) => e.exitCode ?? e.signal).join(", ")})\n${visibleLines(facts.runnerLogs.flat().join("\n"))}\n`,
    );
    return 1;
  }
  const snapshot = reduceEvents(null, null, events);
  const refusal = bundleRefusal(events);
  const path =
    refusal ??
    writeNativeExecutionBundle(join(facts.dir, "bundle"), {
      runId: facts.runId,
      caseId: target.caseId,
      attemptId: "attempt_1",
      scriptBytes: target.bytes,
      events,
      config: { ...target.config, transport: "durable" },
      durationMs: 0,
      driverKind: target.driverKind,
    }).path;
  const terminal = terminalOf(events)!;
  const result = events.find((e) => e.eventType === "run.result.proposed")?.payload as
    { reportedWorkDisposition?: string; summary?: string } | undefined;
  const deliveries = events.length + (facts.run?.replayDeliveries ?? 0);
  if (json) {
    console.log(
      JSON.stringify({
        runId: facts.runId,
        runTerminalState: terminal.runTerminalState,
        committedEvents: events.length,
        deliveries,
        bundle: path,
      }),
    );
  } else {
    show("");
    for (const line of terminalSummary(facts.runId, terminal)) show(line);
    show(`  result          ${result ? `${result.reportedWorkDisposition}: ${result.summary}` : "none proposed"}`);
    show(
      `  session         ${snapshot.sessionState}, turn ${snapshot.turnState}, ${snapshot.timeline.length} events, integrity ${snapshot.integrity}`,
    );
    show(
      `  transport       ${events.length} events committed once, ${deliveries} deliveries, ${facts.run?.connectionCount ?? 0} connection(s), runner exit ${facts.runnerExits.map((e) => e.exitCode ?? e.signal).join(", ")}`,
    );
    show(`  bundle          ${path}`);
  }
  return terminal.runTerminalState === "succeeded" ? 0 : 1;
}
