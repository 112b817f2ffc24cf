import type { Command } from "commander";
import { playFakeHarness } from "../harness/play-fake-harness.js";
import { parseNonNegativeInt } from "./options.js";
import { scriptFromOption } from "./script-option.js";

export function registerFakeHarness(program: Command): void {
  program
    .command("fake-harness")
    .description("play a fake harness script over stdio (the harness side of the local runner protocol)")
    .requiredOption("--script <name|file>", "a paperclip.fake_harness.script.v1 file, or a scenario name")
    .option("--delay-ms <n>", "use this delay for every delay step", parseNonNegativeInt)
    .addHelpText(
      "after",
      `
Reads paperclip.fake_harness.command.v1 lines on stdin and writes
paperclip.fake_harness.message.v1 lines on stdout; log steps for stderr go to stderr.
A runner starts it; run it by hand only to see the protocol.

Example:
  prp fake-harness --script happy-path --delay-ms 0`,
    )
    .action(async (opts: { script: string; delayMs?: number }) => {
      await playFakeHarness(scriptFromOption(program, opts.script).script, opts.delayMs);
    });
}
