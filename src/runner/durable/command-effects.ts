import type { PrpCommand } from "../../contract/kinds.js";
import type { RunController } from "../run-controller.js";
import type { RunnerState } from "./runner-state.js";

export interface CommandOutcome {
  status: "completed" | "failed" | "rejected";
  result: Record<string, unknown>;
}

/** What a command's effect reaches in a durable run. */
export interface CommandRun {
  state: RunnerState;
  controller: RunController;
  /** Whether the run's terminal was committed before this command. */
  terminalAdmitted: boolean;
  /** A runner.suspend took its effect: the runner stops once its result is acknowledged. */
  suspended(commandId: string): void;
}

/**
 * The effect of one journaled command in durable mode: the runner's own commands (drain,
 * suspend, shutdown) here, the run's through the controller. A policy refusal has no effect
 * (logicalEffectCount 0).
 */
export async function executeCommand(command: PrpCommand, run: CommandRun): Promise<CommandOutcome> {
  const refused = (code: string, message: string) => ({
    status: "rejected" as const,
    result: { code, message, logicalEffectCount: 0 },
  });
  const done = { status: "completed" as const, result: { outcome: "accepted", logicalEffectCount: 1 } };
  // After the terminal no command has an effect, in this process or a replacement (wire.md O9).
  if (run.terminalAdmitted)
    return { status: "completed", result: { outcome: "already_terminal", logicalEffectCount: 0 } };
  const lifecycle = run.state.counters().lifecycle;
  if (command.type === "runner.drain") {
    // Stop taking new work, finish what runs, keep flushing the outbox (runtime.md §5.9).
    if (lifecycle === "draining")
      return { status: "completed", result: { outcome: "already_draining", logicalEffectCount: 0 } };
    run.state.setLifecycle("draining");
    run.controller.emitRunnerEvent("runner.draining", {});
    return done;
  }
  if (command.type === "runner.suspend") {
    // Suspend keeps the session for a later resume: no terminal now (runtime.md §5.5, §7.4).
    run.controller.emitRunnerEvent("runner.suspending", {});
    await run.controller.suspend();
    run.controller.emitRunnerEvent("runner.suspended", {});
    run.suspended(command.commandId);
    return done;
  }
  if (command.type === "runner.shutdown") {
    // The runner stops once its outbox is acknowledged; a run still going is cancelled first.
    await run.controller.stop("cancelled");
    return done;
  }
  if (command.type === "turn.start" && (lifecycle === "draining" || run.state.counters().backpressure)) {
    return refused(
      lifecycle === "draining" ? "runner_draining" : "backpressure",
      `a new turn is refused while the runner is ${lifecycle === "draining" ? "draining" : "under backpressure"}`,
    );
  }
  const refusal = run.controller.refusal(command);
  if (refusal) return refused(refusal.code, refusal.reason);
  try {
    await run.controller.apply(command);
    return done;
  } catch (err) {
    return { status: "failed", result: { code: "command_failed", message: (err as Error).message } };
  }
}
