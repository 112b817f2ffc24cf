import type { AgentProfile } from "../../agents/catalog.js";
import type { AgentStartCause } from "../../agents/start-causes.js";
import { visible } from "../../contract/terminal-text.js";
import { cutText } from "../../contract/text-cut.js";
import type { HarnessFact } from "../harness-driver.js";
import type { LogTailSnapshot } from "../log-tail.js";
import { redactText } from "../redaction.js";
import type { ExitFact } from "../supervisor.js";

export type StartFailure = Extract<HarnessFact, { kind: "start_failed" }>;

/** How many of the agent's last stderr lines its start failure quotes. */
const STDERR_LINES = 5;
/** How many offered models a model_unavailable message lists. */
const OFFERED_SHOWN = 10;

export const startFailure = (code: AgentStartCause, message: string): StartFailure => ({
  kind: "start_failed",
  code,
  message,
});

/** Agent text in a stop reason or diagnostic: credentials hidden, escape sequences shown, not played. */
export const agentWords = (text: string, max: number): string => visible(cutText(redactText(text).text, max));

export const exitInWords = (exit: ExitFact): string =>
  exit.signal ? `signal ${exit.signal}` : `exit code ${exit.exitCode}`;

/** The agent ended before answering `initialize`: how, and the last lines it wrote to stderr (already redacted in the tail). */
export function exitedBeforeInitialize(exit: ExitFact, log: LogTailSnapshot): StartFailure {
  const tail = log.lines
    .slice(-STDERR_LINES)
    .map((line) => agentWords(line, 400))
    .filter((line) => line.trim() !== "");
  return startFailure(
    "agent_exited_before_initialize",
    `the agent exited (${exitInWords(exit)}) before it answered initialize: ${
      tail.length > 0 ? `the last lines of its stderr: ${tail.join(" | ")}` : "it wrote nothing to stderr"
    }`,
  );
}

/** The agent needs a login or key: the profile's login line when there is one. */
export const authenticationRequired = (profile: AgentProfile | undefined): StartFailure =>
  startFailure(
    "authentication_required",
    profile ? `${profile.name} is not logged in: ${profile.auth.login}` : "the agent needs a login or key: log it in",
  );

export function modelUnavailable(model: string, offered: string[]): StartFailure {
  const shown = offered.slice(0, OFFERED_SHOWN).map((id) => agentWords(id, 120));
  const more = offered.length > OFFERED_SHOWN ? `, and ${offered.length - OFFERED_SHOWN} more` : "";
  return startFailure(
    "model_unavailable",
    `the agent does not offer the model ${JSON.stringify(model)}: it offers ${shown.join(", ")}${more}`,
  );
}
