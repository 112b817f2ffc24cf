import type { Command } from "commander";

/** `prp agents list` and `prp agents install`. */
export function registerAgentsInstall(agents: Command): void {
  void agents;
}
