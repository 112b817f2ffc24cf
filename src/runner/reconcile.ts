import { decodeValue } from "../contract/decode.js";
import type * as T from "../contract/generated/types.js";
import type { ExitFact } from "../harness/supervisor.js";

/** Why the run is ending, as the runner saw it; the first one set wins. */
export type Intent =
  | "interrupted"
  | "cancelled"
  | "controller_closed"
  | "protocol_violation"
  | "event_refused"
  | "internal_error"
  | "runner_restarted"
  | "agent_start_failed";

/** Why the runner stopped a run of its own accord, when the reason alone does not say it (terminal.stopReason). */
export interface StopCause {
  receiptId: string;
  /** Whose stop it is (default `runner`): `agent_start` when the agent could not start the run. */
  kind?: string;
  code: string;
  message: string;
}

export interface RunFacts {
  intent: Intent | null;
  exit: ExitFact | null;
  /** The first semantic result the harness proposed (already contract-valid), if any. */
  result: T.PRPStructuredRunResult | null;
  /** The first terminal the harness proposed, as it wrote it. */
  proposal: Record<string, unknown> | null;
  stopCause?: StopCause | null;
}

type Disposition = T.PRPRunTerminal["reportedWorkDisposition"];
type Reason = NonNullable<T.PRPRunTerminal["reconciliation"]>["reason"];

const BY_INTENT: Record<Intent, [T.PRPRunTerminal["turnTerminalState"], T.PRPRunTerminal["runTerminalState"], Reason]> =
  {
    interrupted: ["interrupted", "cancelled", "turn_interrupted"],
    cancelled: ["cancelled", "cancelled", "run_cancelled"],
    controller_closed: ["cancelled", "cancelled", "controller_closed"],
    protocol_violation: ["failed", "failed", "harness_protocol_violation"],
    // An event that can never be carried is a report the protocol cannot hold; stopReason names it.
    event_refused: ["failed", "failed", "harness_protocol_violation"],
    // The runner failed in a way nothing handled (the reason enum has no runner fault): the run's
    // process tree failed, and stopReason says it was the runner.
    internal_error: ["failed", "failed", "harness_process_failed"],
    // The runner restarted and its harness's work cannot go on (a session it cannot resume, a
    // turn whose outcome is unknown): the harness process of the run was lost; stopReason says why.
    runner_restarted: ["failed", "failed", "harness_process_failed"],
    // The agent could not start the run (not installed, exited, not logged in, …): stopReason says why.
    agent_start_failed: ["failed", "failed", "harness_process_failed"],
  };

/**
 * The one run.terminal of a run (runtime.md §4.4). Runner facts win over the harness's
 * proposal: an intent decides first, then the process exit and whether a result was seen.
 */
export function reconcileTerminal(facts: RunFacts): T.PRPRunTerminal {
  const [turn, run, reason] = facts.intent
    ? BY_INTENT[facts.intent]
    : !facts.exit?.success
      ? (["failed", "failed", "harness_process_failed"] as const)
      : facts.result
        ? (["completed", "succeeded", "successful_process_and_result"] as const)
        : (["failed", "failed", "semantic_result_missing"] as const);
  const proposal = facts.proposal;
  const proposalValid = proposal !== null && decodeValue(proposal, { kind: "terminal" }).ok;
  const proposed = (key: string): unknown => (proposal ? proposal[key] : undefined);
  const candidates = [
    facts.result?.reportedWorkDisposition,
    proposalValid ? proposed("reportedWorkDisposition") : undefined,
  ].filter(isDisposition);
  const disposition: Disposition =
    run === "succeeded" ? (candidates[0] ?? "done") : (candidates.find((d) => d !== "done") ?? "yielded");
  return {
    schema: "paperclip.prp.terminal.v1",
    turnTerminalState: turn,
    runTerminalState: run,
    reportedWorkDisposition: disposition,
    ...(proposal ? { harnessTerminalProposal: proposal } : {}),
    ...(facts.stopCause
      ? {
          stopReason: {
            schema: "paperclip.prp.stop_reason.v1",
            schemaVersion: 1,
            receiptId: facts.stopCause.receiptId,
            kind: facts.stopCause.kind ?? "runner",
            code: facts.stopCause.code,
            retryable: false,
            message: facts.stopCause.message,
          },
        }
      : {}),
    reconciliation: {
      authority: "runner",
      reason,
      proposalValid,
      proposalContradicted:
        proposal !== null && (proposed("turnTerminalState") !== turn || proposed("runTerminalState") !== run),
      processExit: facts.exit ? { ...facts.exit } : null,
      semanticResultObserved: facts.result !== null,
    },
  };
}

const DISPOSITIONS = new Set<unknown>(["done", "blocked", "needs_review", "yielded"]);
const isDisposition = (d: unknown): d is Disposition => DISPOSITIONS.has(d);
