import { agentsDir } from "../agents/agents-dir.js";
import { CATALOG_ENV, findProfile, loadCatalog, type AgentProfile } from "../agents/catalog.js";
import { launchCommand } from "../agents/launch.js";
import type { AgentStartCause } from "../agents/start-causes.js";
import { ok, type Outcome } from "../contract/result.js";

const err = (error: string): { ok: false; error: string } => ({ ok: false, error });

/** What `--agent NAME` gives the ACP harness: the command line to start, the profile, or why it cannot start. */
export interface NamedAgent {
  command: string;
  profile: AgentProfile;
  unstartable?: { code: AgentStartCause; message: string };
}

/**
 * Resolves a catalog name (built-in catalog, then `catalogPath` or PRP_AGENT_CATALOG) to the
 * command it starts from `dir` (or PRP_AGENTS_DIR, or the cache folder). An unknown name or a
 * broken catalog is the caller's mistake (the error's message says what there is); a profile
 * that is not installed is not: the run starts, and ends at once with agent_not_installed.
 */
export function namedAgent(
  name: string,
  options: { dir?: string; catalogPath?: string },
  env: NodeJS.ProcessEnv = process.env,
): Outcome<NamedAgent, string> {
  const catalog = loadCatalog(options.catalogPath ?? env[CATALOG_ENV]);
  if (!catalog.ok) return err(`${catalog.error.code}: ${catalog.error.message}`);
  const found = findProfile(catalog.value, name);
  if (!found.ok) return err(`${found.error.code}: ${found.error.message}`);
  const profile = found.value;
  const launch = launchCommand(profile, agentsDir(options.dir, env));
  if (launch.ok) return ok({ command: launch.value, profile });
  if (launch.error.code !== "agent_not_installed") return err(`${launch.error.code}: ${launch.error.message}`);
  return ok({ command: name, profile, unstartable: { code: "agent_not_installed", message: launch.error.message } });
}
