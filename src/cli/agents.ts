import type { Command } from "commander";
import { registerAgentsCheck } from "./agents-check.js";
import { registerAgentsInstall } from "./agents-install.js";

/** `prp agents list|install|check`: the named agents of the catalog (docs/agents.md). */
export function registerAgents(program: Command): void {
  const agents = program
    .command("agents")
    .description("named ACP agents (claude, codex, gemini, opencode): list, install, check");
  registerAgentsInstall(agents);
  registerAgentsCheck(agents);
}
