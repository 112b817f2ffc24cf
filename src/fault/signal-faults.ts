import { liveGroupMembers } from "../harness/live-processes.js";
import { signalExitStatus, STOP_SIGNALS, type StopSignal } from "../runner/stop-signals.js";
import type { DurableRunFacts } from "./durable-run.js";
import type { Fault } from "./fault-plan.js";

/**
 * What a run stopped by a signal must show in the host's record and in /proc: a cancelled
 * terminal (run_cancelled), and no live process left in any harness group the run started.
 */
export function signalledRunFindings(facts: DurableRunFacts): string | null {
  const terminal = facts.events.find((e) => e.eventType === "run.terminal")?.payload as
    { runTerminalState?: string; reconciliation?: { reason?: string } } | undefined;
  const problems: string[] = [];
  if (terminal && (terminal.runTerminalState !== "cancelled" || terminal.reconciliation?.reason !== "run_cancelled")) {
    problems.push(
      `the terminal is ${terminal.runTerminalState} (${terminal.reconciliation?.reason}), not cancelled (run_cancelled)`,
    );
  }
  for (const ready of facts.events.filter((e) => e.eventType === "harness.ready")) {
    const group = (ready.payload as { pid: number }).pid;
    const survivors = liveGroupMembers(group);
    if (survivors.length > 0)
      problems.push(`harness group ${group} still has live processes ${survivors.join(", ")} (/proc)`);
  }
  return problems.length > 0 ? problems.join("; ") : null;
}

function signalFault(signal: StopSignal): Fault {
  const status = signalExitStatus(signal);
  return {
    describe: `the runner is sent ${signal} mid-turn: it cancels the run — its harness group ended, one cancelled terminal committed and delivered — and exits ${status}`,
    // linger waits for an interrupt that never comes, so the run is still going when the signal lands.
    script: "linger",
    plan: () => ({
      steps: [
        {
          afterEvents: 11,
          act: async (ctx) => {
            try {
              process.kill(ctx.runner().pid, signal);
            } catch {
              ctx.note(`the runner (pid ${ctx.runner().pid}) had already ended: no ${signal} sent`); // the checks then fail
            }
          },
        },
      ],
    }),
    cutsHarnessShort: true,
    runnerExit: status,
    check: signalledRunFindings,
  };
}

/** One fault per stop signal: signal-hup, signal-int, signal-quit, signal-term. */
export const SIGNAL_FAULTS: Record<string, Fault> = Object.fromEntries(
  STOP_SIGNALS.map((s) => [`signal-${s.slice(3).toLowerCase()}`, signalFault(s)]),
);
