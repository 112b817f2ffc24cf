import { loadCatalog } from "../agents/catalog.js";
import { launchCommand } from "../agents/launch.js";

/**
 * The named agents installed in `agentsDir` (prp agents install), as the local worker
 * advertises them: found on disk, not probed (a probe starts each agent, which takes seconds;
 * a run of one that cannot start ends with the agent's own error). A catalog that does not load
 * advertises none: fake-script runs need no agent.
 */
export function installedAgents(agentsDir: string): string[] {
  const profiles = loadCatalog();
  if (!profiles.ok) return [];
  return profiles.value.filter((p) => launchCommand(p, agentsDir).ok).map((p) => p.name);
}
