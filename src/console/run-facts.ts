import type { PRPQuestionSet } from "../contract/generated/types.js";
import type { PrpEvent } from "../contract/kinds.js";
import type { FailureFacts, RequestDetail } from "./api-types.js";

/** How many failure messages and diagnostics a run keeps: the last ones tell why it ended. */
const KEEP = 20;

/**
 * What the console needs of a run beyond the reducer's snapshot, folded event by event so that
 * nothing re-reads the run: its list line's facts, its requests as asked, and its failure facts.
 */
export interface RunFacts {
  eventCount: number;
  firstAt: string | null;
  lastAt: string | null;
  harness: string | null;
  terminal: Record<string, unknown> | null;
  proposedDisposition: string | null;
  /** Every request as runtime_request.created asked it, by id. */
  requests: Map<string, RequestDetail>;
  failure: FailureFacts;
}

export const emptyFacts = (): RunFacts => ({
  eventCount: 0,
  firstAt: null,
  lastAt: null,
  harness: null,
  terminal: null,
  proposedDisposition: null,
  requests: new Map(),
  failure: { messages: [], diagnostics: [], harnessExit: null },
});

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const stringOr = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);
const pushBounded = <T>(list: T[], item: T) => {
  list.push(item);
  if (list.length > KEEP) list.shift();
};

function requestDetail(payload: Record<string, unknown>): RequestDetail | null {
  const r = record(payload.request ?? payload);
  const requestId = stringOr(r.requestId);
  if (!requestId) return null;
  const choices = Array.isArray(r.choices)
    ? r.choices.map((c) => record(c)).map((c) => ({ key: String(c.key ?? ""), label: String(c.label ?? c.key ?? "") }))
    : [];
  const input = record(r.input).schema === "paperclip.question_set.v1" ? (r.input as PRPQuestionSet) : null;
  return {
    requestId,
    type: stringOr(r.type) ?? stringOr(r.kind) ?? "runtime",
    prompt: typeof r.prompt === "string" ? r.prompt : "",
    choices,
    input,
  };
}

/** Folds `events` (the run's next ones, in delivery order) into `facts`, in place. */
export function foldFacts(facts: RunFacts, events: readonly PrpEvent[]): void {
  for (const e of events) {
    const p = record(e.payload);
    facts.eventCount++;
    facts.firstAt ??= e.emittedAt;
    facts.lastAt = e.emittedAt;
    switch (e.eventType) {
      case "harness.starting":
        facts.harness ??= stringOr(p.command);
        break;
      case "run.terminal":
        facts.terminal ??= p;
        break;
      case "run.result.proposed":
        facts.proposedDisposition = stringOr(p.reportedWorkDisposition) ?? facts.proposedDisposition;
        break;
      case "runtime_request.created": {
        const detail = requestDetail(p);
        if (detail) facts.requests.set(detail.requestId, detail);
        break;
      }
      case "turn.failed":
      case "session.failed":
      case "item.failed":
        if (stringOr(p.message)) pushBounded(facts.failure.messages, `${e.eventType}: ${p.message as string}`);
        break;
      case "harness.diagnostic":
      case "runner.diagnostic":
        pushBounded(facts.failure.diagnostics, {
          eventType: e.eventType,
          code: String(p.code ?? ""),
          message: String(p.message ?? ""),
        });
        break;
      case "harness.exited": {
        const log = record(p.log);
        facts.failure.harnessExit = {
          exitCode: typeof p.exitCode === "number" ? p.exitCode : null,
          signal: stringOr(p.signal),
          stderrTail: Array.isArray(log.lines) ? log.lines.map(String) : [],
          droppedLines: typeof log.droppedLines === "number" ? log.droppedLines : 0,
        };
        break;
      }
    }
  }
}
