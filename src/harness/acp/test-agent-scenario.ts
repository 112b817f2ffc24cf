import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../../contract/package-root.js";

/**
 * One step the test agent plays inside a `session/prompt` (after the prompt arrives, before it
 * answers). Each step is one thing a real agent does on the wire, so a scenario reads as the
 * conversation it produces.
 */
export type AgentStep =
  /** A `session/update` notification, sent through the SDK (so it is valid ACP). */
  | { kind: "update"; update: Record<string, unknown> }
  /** `count` agent_message_chunk updates of `text` (a long stream). */
  | { kind: "chunks"; count: number; text: string }
  /** A line written to stdout as is, past the SDK: how a malformed or unknown message is sent. */
  | { kind: "raw"; message: Record<string, unknown> }
  /** `session/request_permission`; the chosen option is then reported in a tool_call_update and a chunk. */
  | {
      kind: "permission";
      toolCall: Record<string, unknown>;
      options: Array<{ optionId: string; name: string; kind: string }>;
    }
  /**
   * `elicitation/create` in form mode (only when the client advertised form elicitation); the
   * answer is then reported in a chunk: `question answer: <action> <content as JSON>`.
   */
  | { kind: "question"; message: string; requestedSchema: Record<string, unknown> }
  /** Waits for `session/cancel`; the prompt then answers `cancelled`. */
  | { kind: "await_cancel" }
  /** The prompt fails with this JSON-RPC error. */
  | { kind: "error"; code: number; message: string }
  /** The agent process exits with this code, mid-turn. */
  | { kind: "crash"; code: number }
  /** SIGKILLs itself unless `marker` (a file in its cwd) exists, which it creates first: one crash per cwd. */
  | { kind: "crash_once"; marker: string }
  | { kind: "stderr"; text: string }
  | { kind: "delay"; ms: number }
  /** An agent_message_chunk `you said: <the prompt's text>`: which prompt this one is. */
  | { kind: "echo" };

export interface AgentScenario {
  schema: "prp_kit.acp_test_agent.scenario.v1";
  name: string;
  description: string;
  /** What `initialize` advertises. */
  capabilities?: { loadSession?: boolean; close?: boolean };
  /** More members of `agentCapabilities` (a `_meta`, say), as a real agent may advertise. */
  capabilityExtras?: Record<string, unknown>;
  /** More members of the `initialize` answer, over the defaults (`authMethods`, another `protocolVersion`). */
  initializeExtras?: Record<string, unknown>;
  /**
   * More members of the `session/new` answer (`modes`, `models`, `configOptions`): the session's
   * settings. session/set_mode, session/set_model and session/set_config_option are accepted, and
   * each prompt's answer begins with the mode and model then in force.
   */
  sessionExtras?: Record<string, unknown>;
  /** Keeps running after stdin ends, as some real agents do: only a signal ends it. */
  lingerAfterEof?: boolean;
  /** The turn's steps; the prompt then answers `stopReason` (default end_turn). */
  steps: AgentStep[];
  stopReason?: "end_turn" | "max_tokens" | "max_turn_requests" | "refusal";
}

const STEP_KINDS = new Set([
  "echo",
  "update",
  "chunks",
  "raw",
  "permission",
  "question",
  "await_cancel",
  "error",
  "crash",
  "crash_once",
  "stderr",
  "delay",
]);

export const acpScenariosDir = (): string => join(packageRoot(), "src/harness/acp/scenarios");

/** A scenario named by file path or by name (src/harness/acp/scenarios/NAME.json). */
export function resolveAgentScenario(nameOrFile: string): string {
  if (existsSync(nameOrFile)) return nameOrFile;
  const named = join(acpScenariosDir(), `${nameOrFile}.json`);
  if (/^[a-z0-9][a-z0-9-]*$/.test(nameOrFile) && existsSync(named)) return named;
  throw new Error(`no ACP test agent scenario file or name "${nameOrFile}" (scenarios are in ${acpScenariosDir()})`);
}

/** Reads a scenario; the error says which step is wrong. */
export function loadAgentScenario(path: string): AgentScenario {
  const value = JSON.parse(readFileSync(path, "utf8")) as AgentScenario;
  if (value?.schema !== "prp_kit.acp_test_agent.scenario.v1")
    throw new Error(`${path}: schema must be prp_kit.acp_test_agent.scenario.v1`);
  if (!Array.isArray(value.steps)) throw new Error(`${path}: steps must be an array`);
  value.steps.forEach((step, i) => {
    if (!STEP_KINDS.has(step?.kind))
      throw new Error(
        `${path}: /steps/${i}/kind ${JSON.stringify(step?.kind)} is not one of ${[...STEP_KINDS].join(", ")}`,
      );
  });
  return value;
}
