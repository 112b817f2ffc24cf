import { ok } from "../contract/result.js";
import { agentError, type AgentOutcome } from "./agent-error.js";
import { installDir, installedBin, isInstalled } from "./agents-dir.js";
import { isPackageLaunch, type AgentProfile } from "./catalog.js";

/** A word for /bin/sh: single-quoted, so nothing in it is expanded. */
export const shellWord = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The command line a profile starts (run by `/bin/sh -c "exec …"`, as --agent-command is): the
 * installed package's bin, or the profile's own command, with its arguments. A package profile
 * that is not installed is `agent_not_installed`, with the command that installs it.
 */
export function launchCommand(profile: AgentProfile, dir: string): AgentOutcome<string> {
  const launch = profile.launch;
  if (!isPackageLaunch(launch)) return ok([launch.command, ...launch.args.map(shellWord)].join(" "));
  if (!isInstalled(dir, profile.name, launch))
    return agentError(
      "agent_not_installed",
      profile.name,
      `${profile.name} (${launch.package}@${launch.version}) is not installed in ${dir}: run \`prp agents install ${profile.name}\``,
    );
  const bin = installedBin(installDir(dir, profile.name, launch), launch);
  return ok([bin, ...launch.args].map(shellWord).join(" "));
}
