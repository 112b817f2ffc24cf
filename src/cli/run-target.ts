import type { Command } from "commander";
import type { LoadedScript } from "../harness/script-file.js";
import type { AgentChoice } from "./agent-options.js";
import { scriptFromOption } from "./script-option.js";

/** What a run plays — a fake harness script, or an agent and its prompt — and how its bundle names it. */
export interface RunTarget {
  /** The loaded fake harness script, when the run plays one. */
  script?: LoadedScript;
  scriptPath?: string;
  turnText: string;
  caseId: string;
  /** The bundle's case bytes: the script, or the agent command and prompt as JSON. */
  bytes: Uint8Array;
  config: Record<string, unknown>;
  driverKind: string;
}

export function targetOfScript(script: LoadedScript): RunTarget {
  return {
    script,
    scriptPath: script.path,
    turnText: `Play the ${script.script.name} script.`,
    caseId: script.script.name,
    bytes: script.bytes,
    config: { script: script.script.name },
    driverKind: "fake_harness",
  };
}

export const scriptTarget = (program: Command, nameOrFile: string): RunTarget =>
  targetOfScript(scriptFromOption(program, nameOrFile));

export function agentTarget(agent: AgentChoice, prompt: string): RunTarget {
  const input = "command" in agent ? { agentCommand: agent.command, prompt } : { agent: agent.name, prompt };
  return {
    turnText: prompt,
    caseId: "acp_agent",
    bytes: Buffer.from(JSON.stringify(input)),
    config: input,
    driverKind: "acp",
  };
}
