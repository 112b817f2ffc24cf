import { existsSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import { DEFAULT_AGENT_IDLE_MS } from "../harness/acp/acp-driver-options.js";
import { PERMISSION_POLICIES, type PermissionPolicy } from "../harness/acp/permissions.js";
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

export interface AgentFlags {
  agentCommand: string;
  agentCwd?: string;
  agentEnv?: Record<string, string>;
  permissionPolicy: PermissionPolicy;
  agentIdleMs?: number;
}

/**
 * The prp-runnerd flags that select an ACP agent. The agent works where the user ran the
 * controller, never in the runner's own folder (a durable runner works in the run's state).
 */
export function agentRunnerdArgs(flags: AgentFlags): string[] {
  return [
    "--harness",
    "acp",
    "--agent-command",
    flags.agentCommand,
    "--permission-policy",
    flags.permissionPolicy,
    "--agent-cwd",
    flags.agentCwd ?? process.cwd(),
    ...Object.entries(flags.agentEnv ?? {}).flatMap(([k, v]) => ["--agent-env", `${k}=${v}`]),
    ...(flags.agentIdleMs !== undefined ? ["--agent-idle-ms", String(flags.agentIdleMs)] : []),
  ];
}

/** `--agent`, `--prompt`, `--agent-cwd`, `--agent-env`, `--agent-idle-ms` and `--permission-policy` on a controller command. */
export function withAgentOptions(command: Command, agentHelp: string, policy: Option): Command {
  return command
    .option("--agent <cmd>", agentHelp)
    .option("--prompt <text>", "with --agent: what the turn asks the agent")
    .option("--agent-cwd <dir>", "with --agent: the agent's working directory (default: this directory)", parseAgentCwd)
    .option(
      "--agent-env <K=V>",
      "with --agent: a variable for the agent, on top of PATH and HOME (repeatable)",
      collectAgentEnv,
    )
    .option("--agent-idle-ms <n>", `with --agent: ${AGENT_IDLE_HELP}`, parsePositiveInt)
    .addOption(policy);
}
