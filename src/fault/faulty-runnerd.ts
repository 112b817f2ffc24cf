// prp-runnerd with a crash point: the fault framework spawns this entry instead of
// bin/prp-runnerd.js, so that no variable in the environment can make a production runner kill
// itself. It reads `PRP_RUNNER_CRASH_AT` (`POINT:N`, runner-crash.ts), installs the hooks that
// crash there, and then runs the package's own entry unchanged.
import { handoff } from "../runner/runnerd-handoff.js";
import { crashHooks, parseCrashPoint } from "./runner-crash.js";

const crashAt = parseCrashPoint(process.env.PRP_RUNNER_CRASH_AT);
delete process.env.PRP_RUNNER_CRASH_AT;
if (crashAt) handoff.hooks = crashHooks(crashAt, (text) => process.stderr.write(`prp-runnerd: ${text}\n`));
// From dist/src/fault/: the package's bin/ (the ticket's handoff, the helper subcommands, the daemon).
await import(new URL("../../../bin/prp-runnerd.js", import.meta.url).href);
