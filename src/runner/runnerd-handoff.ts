import type { RunnerHooks } from "./runner-hooks.js";

/**
 * What the entry script hands the daemon before loading it: the one-use bootstrap ticket, which
 * bin/prp-runnerd.js takes out of the environment (runtime.md §5.1: read and removed before
 * argument parsing; no module, argument parser, child process or log line ever sees it in the
 * environment), and the test hooks that only src/fault/faulty-runnerd.ts sets. This module imports
 * nothing at run time, so loading it runs no other code.
 */
export const handoff: { bootstrapTicket: string | null; hooks: RunnerHooks | undefined } = {
  bootstrapTicket: null,
  hooks: undefined,
};
