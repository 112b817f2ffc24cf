import type { RunSpec } from "./create-run.js";

/**
 * prp-runnerd's harness flags for a run's agent: a ticket's runner arguments and a worker's
 * claim. A named agent is resolved on the runner's machine (the worker adds --agents-dir).
 */
export function harnessArgs(spec: RunSpec | null): string[] {
  if (spec?.agent.kind === "profile") return ["--agent", spec.agent.profile];
  if (spec?.agent.kind === "command") return ["--harness", "acp", "--agent-command", spec.agent.command];
  if (spec?.agent.kind === "fake") return ["--script", spec.agent.script];
  return ["--script", "happy-path"];
}
