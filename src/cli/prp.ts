#!/usr/bin/env node
import { Command } from "commander";
import { usageExitsTwo } from "./usage-exit.js";
import { packageVersion } from "../contract/package-info.js";
import { registerAgents } from "./agents.js";
import { registerAuthority } from "./authority.js";
import { registerConsole } from "./console.js";
import { registerEvents } from "./events.js";
import { registerContract } from "./contract.js";
import { registerDemo } from "./demo.js";
import { registerFakeHarness } from "./fake-harness.js";
import { registerFault } from "./fault.js";
import { registerRun } from "./run.js";
import { registerReplay } from "./replay.js";
import { registerSubmit } from "./submit.js";
import { registerValidate } from "./validate.js";
import { registerWorker } from "./worker.js";

const program = new Command("prp")
  .description("PRP Kit: the Paperclip Runner Protocol contract, runner and control-plane tools")
  .version(packageVersion(), "-V, --version")
  .showHelpAfterError("(run with --help for usage)")
  .exitOverride(usageExitsTwo)
  .addHelpText(
    "after",
    `
Examples:
  prp validate protocol/fixtures/replay/happy-path.json    check a document against the contract
  prp validate --help                                      everything validate can do
  prp authority serve --help                               run an authority for many runs, with admin commands beside it
  prp contract diff HEAD~10                                what changed in the contract, and whom it breaks`,
  );

registerValidate(program);
registerDemo(program);
registerFault(program);
registerFakeHarness(program);
registerRun(program);
registerReplay(program);
registerAuthority(program);
registerEvents(program);
registerContract(program);
registerConsole(program);
registerSubmit(program);
registerWorker(program);
registerAgents(program);

await program.parseAsync(process.argv);
