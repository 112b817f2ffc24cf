import { cutText } from "../../../contract/text-cut.js";
import type { Obj } from "./wire.js";

/**
 * Seed 002 rule 6 for ACP: only the reserved finish/block semantic operations may propose a run
 * result, and ACP has none, so an agent's `end_turn` is not a claim that the work is done. The
 * runner proposes the result itself, always `needs_review`: the agent's final answer as the
 * summary, the objective not claimed satisfied. Nothing the agent writes — its text, a tool
 * call named like a finish operation, metadata — reaches the disposition.
 */
export function reviewResult(finalText: string): Obj {
  return {
    schema: "paperclip.run_result.v1",
    reportedWorkDisposition: "needs_review",
    summary: cutText(finalText.trim() || "The agent ended its turn without a message.", 12_000),
    completionClaim: { contractRevision: "acp_turn", objectiveSatisfied: false, criteria: [], remainingWork: [] },
    evidence: [],
    verification: [],
    attentionRequests: [
      {
        kind: "review",
        summary: "An ACP agent ended its turn; ACP has no finish operation, so a person reviews the work.",
        ownerClass: "human",
      },
    ],
    artifacts: [],
  };
}
