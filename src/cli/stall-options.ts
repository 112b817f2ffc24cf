import { InvalidArgumentError, type Command } from "commander";
import { DEFAULT_STALL_GRACE_MS, DEFAULT_STALL_LIMIT_MS, MAX_STALL_MS } from "../runner/run-machine/stall-watch.js";
import { parseNonNegativeInt } from "./options.js";

export { stallArgs, stallLimits, type StallFlags } from "../runner/stall-flags.js";

/** A stall limit or grace: a whole number of milliseconds, at most 7 days. */
function parseStallMs(value: string): number {
  const ms = parseNonNegativeInt(value);
  if (ms > MAX_STALL_MS) throw new InvalidArgumentError(`expected at most ${MAX_STALL_MS} (7 days), got ${value}`);
  return ms;
}

/**
 * `--stall-limit-ms` and `--stall-grace-ms`, the same words on prp-runnerd and on the commands
 * that start it. A command that only passes them on says so with `prefix`.
 */
export function addStallOptions(command: Command, prefix = ""): Command {
  return command
    .option(
      "--stall-limit-ms <n>",
      `${prefix}how long a turn may report no progress (no event, no tool update; a live process is not progress) before it stalls: a runner.diagnostic run_stalled, an interrupt, then a cancel after the grace; the run ends with stopReason stalled. 0 turns it off (default ${DEFAULT_STALL_LIMIT_MS} ms)`,
      parseStallMs,
    )
    .option(
      "--stall-grace-ms <n>",
      `${prefix}after a stall's interrupt, how long the harness has to end the turn before the run is cancelled (default ${DEFAULT_STALL_GRACE_MS} ms)`,
      parseStallMs,
    );
}
