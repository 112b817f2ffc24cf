import type { AgentProfile } from "../../agents/catalog.js";
import type { AgentStartCause } from "../../agents/start-causes.js";
import type { SandboxPolicy } from "../sandbox/sandbox-policy.js";
import type { PermissionPolicy } from "./permissions.js";

/** How an AcpDriver launches, bounds and answers its agent. */
export interface AcpDriverOptions {
  /** The agent's command line, run by /bin/sh (e.g. `npx -y @zed-industries/claude-code-acp`). */
  command: string;
  /** The agent's working directory and the cwd of its ACP session (absolute). */
  cwd: string;
  /** Variables for the agent on top of PATH and HOME (`--agent-env K=V`); the reserved runtime keys among them are ignored. */
  env?: Record<string, string>;
  /** The runner's own variables for the agent (runtime.md §13.2), set last: configured ones cannot override them. */
  runtimeEnv?: Record<string, string>;
  /** Who answers a permission request the controller is not asked about. */
  permissionPolicy: PermissionPolicy;
  runId: string;
  sessionId: string;
  /** Durable mode: the run's turn and item, which semantic receipts are correlated to. */
  identity?: { turnId: string; itemId: string };
  maxLineBytes?: number;
  logMaxLines?: number;
  logMaxBytes?: number;
  /** SIGTERM → SIGKILL grace for the agent's group. */
  graceMs?: number;
  /** How long a cancelled turn or a finished agent gets before its group is ended (default 2 s). */
  settleMs?: number;
  /** How long the agent has to answer initialize, session/new and session/load (default 60 s: npx may install it first). */
  handshakeMs?: number;
  /**
   * How long a prompt may go without a single message from the agent while the agent is not
   * waiting on the controller (a permission, a question); any message starts it again.
   */
  idleMs?: number;
  clientVersion?: string;
  /** The sandbox the agent runs in (its workspace and HOME writable); absent: none. */
  sandbox?: SandboxPolicy;
  /** The catalog profile the agent was named by (`--agent NAME`): its credential sources, login line and permission modes. */
  profile?: AgentProfile;
  /** The model the run asks for (`--agent-model`): it must be one the session offers, and is selected before the prompt. */
  model?: string;
  /** Why the agent cannot be started at all (a profile that is not installed): no process is started, and the run ends. */
  unstartable?: { code: AgentStartCause; message: string };
}

export const DEFAULT_HANDSHAKE_MS = 60_000;
export const DEFAULT_AGENT_IDLE_MS = 300_000;
