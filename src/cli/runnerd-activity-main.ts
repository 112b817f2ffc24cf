import { Command } from "commander";
import { addActivityCommands } from "./runnerd-activity.js";
import { usageExitsTwo } from "./usage-exit.js";

// `prp-runnerd notification-context|record-activity`, without loading the daemon's drivers and
// transport: a tool runs the helper once per operation, so it starts as little as it needs.
const program = new Command("prp-runnerd").exitOverride(usageExitsTwo);
addActivityCommands(program);
await program.parseAsync(process.argv);
