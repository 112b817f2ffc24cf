/** Small valid documents that tests change one field at a time. */
export const AT = "2026-08-07T12:00:00.000Z";

export const event = (version: 1 | 2 | 3, overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  schema: `paperclip.prp.event.v${version}`,
  sourceEventId: "event_01",
  sourceSeq: 1,
  sourceInstanceId: "runner_test",
  sourceKind: "runner",
  runId: "run_test",
  normalizedSessionId: "session_test",
  eventType: "item.delta",
  schemaVersion: version,
  priority: 2,
  emittedAt: AT,
  payload: { text: "hello" },
  ...overrides,
});

export const command = (version: 1 | 2 | 3, overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  schema: `paperclip.prp.command.v${version}`,
  commandId: "command_01",
  controllerSeq: 1,
  type: "turn.start",
  issuedAt: AT,
  payload: { text: "do the work" },
  ...overrides,
});

export const result = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  schema: "paperclip.run_result.v1",
  reportedWorkDisposition: "done",
  summary: "Did the work.",
  completionClaim: { contractRevision: "rev-1", objectiveSatisfied: true, criteria: [], remainingWork: [] },
  evidence: [],
  verification: [],
  attentionRequests: [],
  artifacts: [],
  ...overrides,
});

export const terminal = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  schema: "paperclip.prp.terminal.v1",
  turnTerminalState: "completed",
  runTerminalState: "succeeded",
  reportedWorkDisposition: "done",
  ...overrides,
});

export const questionSet = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  schema: "paperclip.question_set.v1",
  questions: [
    {
      id: "approach",
      prompt: "Which approach?",
      required: true,
      answerMode: "single_select",
      intent: "decision",
      recommendationRationale: "A is simpler.",
      options: [
        { id: "a", label: "Approach A", recommended: true },
        { id: "b", label: "Approach B" },
      ],
    },
    { id: "notes", prompt: "Anything else?", required: false, answerMode: "text" },
  ],
  ...overrides,
});

export const json = (value: unknown): string => JSON.stringify(value);
