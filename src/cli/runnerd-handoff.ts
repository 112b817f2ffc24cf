/**
 * What bin/prp-runnerd.js takes out of the environment before it loads any other module: the
 * one-use bootstrap ticket (runtime.md §5.1: read and removed before argument parsing; no
 * module, argument parser, child process or log line ever sees it in the environment) and the
 * fault-injection crash point. This module imports nothing, so loading it runs no other code.
 */
export const handoff: { bootstrapTicket: string | null; crashAt: string | undefined } = {
  bootstrapTicket: null,
  crashAt: undefined,
};
