import { constants } from "node:os";

/**
 * The signals that ask a runner to stop. Each one cancels the run instead of killing the
 * runner: the harness group is ended and the run's one terminal reported (written to stdout in
 * local mode, committed to the outbox and delivered in durable mode), then the runner exits
 * with `signalExitStatus`, the shell's convention for a process stopped by that signal.
 */
export const STOP_SIGNALS = ["SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM"] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** 128 + the signal's number: 129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM. */
export const signalExitStatus = (signal: StopSignal): number => 128 + constants.signals[signal];
