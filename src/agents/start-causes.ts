/**
 * Why an agent could not start a run: the `stopReason.code` of its terminal (kind
 * `agent_start`), the same words in `prp run`, the console and the API.
 */
export const AGENT_START_CAUSES = [
  /** A named agent whose package is not in the agents folder. */
  "agent_not_installed",
  /** The agent's process ended before it answered ACP `initialize` (its stderr tail follows). */
  "agent_exited_before_initialize",
  /** The agent needs a login or key it does not have. */
  "authentication_required",
  /** `initialize` was answered with an ACP version this client does not speak. */
  "unsupported_protocol_version",
  /** The model the run asks for is not one the agent offers. */
  "model_unavailable",
] as const;

export type AgentStartCause = (typeof AGENT_START_CAUSES)[number];

export const STOP_REASON_KIND = "agent_start";

export const isAgentStartCause = (code: unknown): code is AgentStartCause =>
  (AGENT_START_CAUSES as readonly unknown[]).includes(code);
