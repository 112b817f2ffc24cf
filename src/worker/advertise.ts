import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { defaultSandboxMode, sandboxPolicy } from "../harness/sandbox/sandbox-policy.js";
import { launchCommand } from "../agents/launch.js";
import { findProfile, type AgentProfile } from "../agents/catalog.js";
import { probeAgent } from "../agents/probe.js";
import { ok } from "../contract/result.js";
import type { AgentOutcome } from "../agents/agent-error.js";

/** `--agents`: profile names, or `auto` (every installed profile that probes ready). */
export type AgentsOption = "auto" | string[];

/** A verdict on one profile: only `ready` is advertised; `cause` says why another is not. */
export interface AgentVerdict {
  verdict: string;
  cause?: string;
}

/** Asks one installed profile whether it can take a run now. */
export type AgentProber = (profile: AgentProfile) => Promise<AgentVerdict>;

/**
 * `prp agents check`'s probe, as this worker's runs will start the agent: in the default harness
 * sandbox with the worker's secrets hidden, this user's HOME (its logins), no variables of the
 * worker's own, a workspace of its own. Where the sandbox cannot be set up, no run could start.
 */
export function initializeProber(agentsDir: string, cwd: string, hidden: string[]): AgentProber {
  const sandboxed = sandboxPolicy(
    { sandbox: defaultSandboxMode(), sandboxRead: [], sandboxWrite: [], sandboxHide: [] },
    hidden,
    () => {},
  );
  return async (profile) => {
    if (!sandboxed.ok) return { verdict: "broken", cause: "sandbox_unavailable" };
    mkdirSync(cwd, { recursive: true, mode: 0o700 });
    const report = await probeAgent(profile, { agentsDir, home: homedir(), cwd, sandbox: sandboxed.policy });
    return { verdict: report.verdict, ...(report.cause ? { cause: report.cause } : {}) };
  };
}

/**
 * The names a worker advertises. Named ones must be in the catalog (the authority routes runs by
 * them; a typo would silently claim nothing) and are advertised as given. With `auto`, every
 * profile installed in `agentsDir` is probed, at once, and those whose verdict is `ready` are
 * advertised; each verdict is logged, and so is each profile not installed.
 */
export async function advertisedAgents(
  option: AgentsOption,
  profiles: AgentProfile[],
  agentsDir: string,
  probe: AgentProber,
  log: (line: string) => void,
): Promise<AgentOutcome<string[]>> {
  if (option !== "auto") {
    for (const name of option) {
      const found = findProfile(profiles, name);
      if (!found.ok) return found;
    }
    return ok(option);
  }
  const verdicts = await Promise.all(
    profiles.map(async (profile) => {
      const launch = launchCommand(profile, agentsDir);
      if (!launch.ok) return { name: profile.name, verdict: "not installed" };
      const report = await probe(profile).catch((err: Error): AgentVerdict => ({
        verdict: "broken",
        cause: err.message,
      }));
      return { name: profile.name, verdict: report.verdict, cause: report.cause };
    }),
  );
  for (const { name, verdict, cause } of verdicts) log(`agent ${name}: ${verdict}${cause ? ` (${cause})` : ""}`);
  return ok(verdicts.filter((v) => v.verdict === "ready").map((v) => v.name));
}
