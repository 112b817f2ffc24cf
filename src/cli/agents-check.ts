import type { Command } from "commander";

/** `prp agents check`. */
export function registerAgentsCheck(agents: Command): void {
  void agents;
}
