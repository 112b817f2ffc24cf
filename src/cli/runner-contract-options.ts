import { Option, type Command } from "commander";
import { RUNNER_CONTRACT_POLICIES } from "../authority/runner-contract.js";

/** `--runner-contract` and `--contract-archive`, for every command that hosts an authority. */
export function withRunnerContractOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--runner-contract <policy>",
        "which runners' contracts the authority accepts at the handshake: equal (the same contract digest), compatible (a digest found in --contract-archive whose differences neither side's documents notice), any",
      )
        .choices(RUNNER_CONTRACT_POLICIES)
        .default("equal"),
    )
    .option(
      "--contract-archive <dir>",
      "with --runner-contract compatible: known contracts, one folder per digest (prp contract export --out DIR)",
    );
}
