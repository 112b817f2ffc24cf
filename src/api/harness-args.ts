import { stallArgs } from "../runner/stall-flags.js";
import type { RunSpec } from "./create-run.js";

/**
 * prp-runnerd's harness flags for a run's agent: a ticket's runner arguments and a worker's
 * claim. A named agent is resolved on the runner's machine (the worker adds --agents-dir). An
 * ACP agent's permission policy goes with it; without one the runner keeps its default (deny).
 * createRunRequest refuses a policy on a fake-harness run. The stall limits, given, go with any harness.
 */
export function harnessArgs(spec: RunSpec | null): string[] {
  return [...agentArgs(spec), ...(spec ? stallArgs(spec) : [])];
}

function agentArgs(spec: RunSpec | null): string[] {
  const policy = spec?.permissionPolicy ? ["--permission-policy", spec.permissionPolicy] : [];
  if (spec?.agent.kind === "profile") return ["--agent", spec.agent.profile, ...policy];
  if (spec?.agent.kind === "command") return ["--harness", "acp", "--agent-command", spec.agent.command, ...policy];
  if (spec?.agent.kind === "fake") return ["--script", spec.agent.script];
  return ["--script", "happy-path"];
}
