import { isInstalled } from "./agents-dir.js";
import { isPackageLaunch, type AgentProfile } from "./catalog.js";
import { nodeSatisfies } from "./node-range.js";

/** One catalog profile as `prp agents list` shows it. */
export interface AgentListing {
  name: string;
  title: string;
  /** `package@version`, or null for a command profile. */
  package: string | null;
  /** A command profile's command line. */
  command: string | null;
  /** In the agents folder and complete; null for a command profile (nothing to install). */
  installed: boolean | null;
  /** The profile's `launch.node`, and whether this Node is in it (null: the range could not be read, `note` says why). */
  node: { range: string; version: string; ok: boolean | null; note?: string } | null;
  login: string;
}

export function listAgents(
  profiles: AgentProfile[],
  dir: string,
  nodeVersion: string = process.version,
): AgentListing[] {
  return profiles.map((p) => {
    const launch = p.launch;
    const common = { name: p.name, title: p.title, login: p.auth.login };
    if (!isPackageLaunch(launch))
      return {
        ...common,
        package: null,
        command: [launch.command, ...launch.args].join(" "),
        installed: null,
        node: null,
      };
    const check = nodeSatisfies(launch.node, nodeVersion);
    return {
      ...common,
      package: `${launch.package}@${launch.version}`,
      command: null,
      installed: isInstalled(dir, p.name, launch),
      node: check.ok
        ? { range: launch.node, version: nodeVersion, ok: check.value }
        : { range: launch.node, version: nodeVersion, ok: null, note: check.error },
    };
  });
}
