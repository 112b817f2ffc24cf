import { existsSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import { DEFAULT_AGENT_IDLE_MS } from "../harness/acp/acp-driver-options.js";
import { PERMISSION_POLICIES, type PermissionPolicy } from "../harness/acp/permissions.js";
import { agentsDir } from "../agents/agents-dir.js";
import { findProfile, loadCatalog } from "../agents/catalog.js";
import { parsePositiveInt } from "./options.js";

/** `--agent-env K=V`, repeatable: the variables an agent gets on top of PATH and HOME. */
export function collectAgentEnv(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = value.indexOf("=");
  const name = value.slice(0, at);
  if (at < 1 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new InvalidArgumentError(`expected NAME=VALUE with a variable name, got "${value}"`);
  return { ...previous, [name]: value.slice(at + 1) };
}

/** `--agent-cwd`: an existing directory, made absolute (ACP session paths are absolute). */
export function parseAgentCwd(value: string): string {
  const dir = isAbsolute(value) ? value : resolve(value);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new InvalidArgumentError(`"${value}" is not a directory`);
  return dir;
}

/** `--agent-idle-ms`, the same words on every command that has it. */
export const AGENT_IDLE_HELP = `how long the agent may send nothing during its turn while it is not waiting on an answer; then the run fails (agent_timeout) (default ${DEFAULT_AGENT_IDLE_MS / 60_000} min)`;

export const permissionPolicyOption = (defaultPolicy: PermissionPolicy | undefined, description: string): Option => {
  const option = new Option("--permission-policy <policy>", description).choices([...PERMISSION_POLICIES]);
  return defaultPolicy ? option.default(defaultPolicy) : option;
};

/** The agent a controller runs: a catalog profile by name (resolved where the runner is), or a command line. */
export type AgentChoice = { name: string; agentsDir: string } | { command: string };

export interface AgentFlags {
  agent: AgentChoice;
  agentCwd?: string;
  agentEnv?: Record<string, string>;
  permissionPolicy: PermissionPolicy;
  agentIdleMs?: number;
  agentModel?: string;
}

/** The options withAgentOptions adds, as commander gives them. */
export interface AgentOptionValues {
  agent?: string;
  agentCommand?: string;
  agentsDir?: string;
  prompt?: string;
  agentCwd?: string;
  agentEnv?: Record<string, string>;
  permissionPolicy?: PermissionPolicy;
  agentIdleMs?: number;
  agentModel?: string;
}

/** A controller's agent flags for prp-runnerd: the chosen agent and each agent option given. */
export const agentFlagsOf = (agent: AgentChoice, opts: AgentOptionValues, policy: PermissionPolicy): AgentFlags => ({
  agent,
  permissionPolicy: policy,
  ...(opts.agentCwd ? { agentCwd: opts.agentCwd } : {}),
  ...(opts.agentEnv ? { agentEnv: opts.agentEnv } : {}),
  ...(opts.agentIdleMs ? { agentIdleMs: opts.agentIdleMs } : {}),
  ...(opts.agentModel ? { agentModel: opts.agentModel } : {}),
});

/**
 * --agent NAME or --agent-command CMD, or neither. A name must be in the catalog (built-in and
 * PRP_AGENT_CATALOG): an unknown one is a usage error listing the names. Whether it is installed
 * is the runner's to say (it ends the run `agent_not_installed`), so it is not checked here.
 */
export function agentChoice(program: Command, opts: AgentOptionValues): AgentChoice | undefined {
  if (opts.agent === undefined) {
    if (opts.agentsDir !== undefined) program.error("--agents-dir goes with --agent NAME", { exitCode: 2 });
    return opts.agentCommand === undefined ? undefined : { command: opts.agentCommand };
  }
  const profiles = loadCatalog();
  const found = profiles.ok ? findProfile(profiles.value, opts.agent) : profiles;
  if (!found.ok) return program.error(`prp: ${found.error.message}`, { exitCode: 2 });
  return { name: found.value.name, agentsDir: agentsDir(opts.agentsDir) };
}

/**
 * The prp-runnerd flags that select an ACP agent: a name and the folder it is installed in (the
 * runner resolves it), or a command line. The agent works where the user ran the controller,
 * never in the runner's own folder (a durable runner works in the run's state).
 */
export function agentRunnerdArgs(flags: AgentFlags): string[] {
  const agent = flags.agent;
  return [
    ...("command" in agent
      ? ["--harness", "acp", "--agent-command", agent.command]
      : ["--agent", agent.name, "--agents-dir", agent.agentsDir]),
    "--permission-policy",
    flags.permissionPolicy,
    "--agent-cwd",
    flags.agentCwd ?? process.cwd(),
    ...Object.entries(flags.agentEnv ?? {}).flatMap(([k, v]) => ["--agent-env", `${k}=${v}`]),
    ...(flags.agentIdleMs !== undefined ? ["--agent-idle-ms", String(flags.agentIdleMs)] : []),
    ...(flags.agentModel !== undefined ? ["--agent-model", flags.agentModel] : []),
  ];
}

/**
 * `--agent`, `--agent-command`, `--agents-dir`, `--prompt`, `--agent-cwd`, `--agent-env`,
 * `--agent-idle-ms`, `--agent-model` and `--permission-policy` on a controller command.
 */
export function withAgentOptions(command: Command, agentHelp: string, policy: Option): Command {
  return command
    .addOption(
      new Option(
        "--agent <name>",
        `${agentHelp}: a named agent of the catalog (claude, codex, gemini, opencode; prp agents list)`,
      ).conflicts("agentCommand"),
    )
    .option("--agent-command <cmd>", `${agentHelp}: an Agent Client Protocol agent's own command line`)
    .option(
      "--agents-dir <dir>",
      "with --agent: the folder named agents are installed in (default: PRP_AGENTS_DIR, else ~/.cache/prp-kit/agents)",
    )
    .option("--prompt <text>", "with --agent or --agent-command: what the turn asks the agent")
    .option("--agent-cwd <dir>", "with an agent: its working directory (default: this directory)", parseAgentCwd)
    .option(
      "--agent-env <K=V>",
      "with an agent: a variable for it, on top of PATH and HOME (repeatable)",
      collectAgentEnv,
    )
    .option("--agent-idle-ms <n>", `with an agent: ${AGENT_IDLE_HELP}`, parsePositiveInt)
    .option(
      "--agent-model <id>",
      "with an agent: the model it must use; a session that does not offer it ends the run (model_unavailable)",
    )
    .addOption(policy);
}
