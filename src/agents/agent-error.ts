import type { Outcome } from "../contract/result.js";

/** Why an agent cannot be named, installed or started: a code, where, and what a person can do. */
export interface AgentError {
  code:
    | "catalog_invalid"
    | "catalog_unreadable"
    | "agent_unknown"
    | "agent_not_installed"
    | "agent_install_failed"
    | "npm_not_found";
  /** A JSON pointer into the catalog, or the agent's name. */
  path: string;
  message: string;
}

export type AgentOutcome<T> = Outcome<T, AgentError>;

export const agentError = (
  code: AgentError["code"],
  path: string,
  message: string,
): { ok: false; error: AgentError } => ({
  ok: false,
  error: { code, path, message },
});
