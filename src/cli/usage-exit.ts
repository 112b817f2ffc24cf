import type { CommanderError } from "commander";

/** Commander's refusals of a command line. It exits 1 on them; usage errors exit 2 here, as the commands' help says. */
const USAGE_ERRORS = new Set([
  "commander.unknownOption",
  "commander.unknownCommand",
  "commander.excessArguments",
  "commander.missingArgument",
  "commander.optionMissingArgument",
  "commander.missingMandatoryOptionValue",
  "commander.conflictingOption",
  "commander.invalidArgument",
  "commander.help", // a command group run without its subcommand: its help, as an error
]);

/** For `Command.exitOverride`: set on a program before its subcommands are added, they inherit it. */
export function usageExitsTwo(err: CommanderError): never {
  process.exit(err.exitCode === 1 && USAGE_ERRORS.has(err.code) ? 2 : err.exitCode);
}
