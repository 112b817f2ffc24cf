/**
 * Fake harness scripts for the benches: the given event steps, then a done result, the turn's
 * completion and exit 0, so the run ends with one run.terminal.
 */
import { writeFileSync } from "node:fs";

export interface EventStep {
  kind: "event";
  event_type: string;
  item_id?: string;
  payload: Record<string, unknown>;
}

const RESULT = {
  schema: "paperclip.run_result.v1",
  reportedWorkDisposition: "done",
  summary: "streamed",
  completionClaim: { contractRevision: "bench", objectiveSatisfied: true, criteria: [], remainingWork: [] },
  evidence: [],
  verification: [],
  attentionRequests: [],
  artifacts: [],
};

export function writeScript(path: string, name: string, events: EventStep[]): void {
  writeFileSync(
    path,
    JSON.stringify({
      schema: "paperclip.fake_harness.script.v1",
      name,
      steps: [
        ...events,
        { kind: "result", payload: RESULT },
        { kind: "event", event_type: "turn.completed", payload: {} },
        { kind: "exit", code: 0 },
      ],
    }),
  );
}
