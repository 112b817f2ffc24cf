import type { PRPQuestionSet } from "../contract/generated/types.js";
import type { PrpEvent } from "../contract/kinds.js";
import { requestIdOf } from "../reducer/requests.js";
import { foldFileChange, type FileChangeEntry } from "./file-change-facts.js";

/** A request as the harness asked it (runtime_request.created): what a form needs to answer it. */
export interface RequestDetail {
  requestId: string;
  type: string;
  prompt: string;
  /** A permission's choices, in the harness's order. */
  choices: Array<{ key: string; label: string }>;
  /** A structured question set (paperclip.question_set.v1), answered with a question response. */
  input: PRPQuestionSet | null;
}

/** Why a run failed, in words: what its events said, collected as they are read. */
export interface FailureFacts {
  /** The `message` of failed turns, sessions and items, in order (the last ones). */
  messages: string[];
  /** harness.diagnostic and runner.diagnostic payloads (the last ones). */
  diagnostics: Array<{ eventType: string; code: string; message: string }>;
  /** The harness's last exit (harness.exited), with the tail of its stderr. */
  harnessExit: { exitCode: number | null; signal: string | null; stderrTail: string[]; droppedLines: number } | null;
}

export type TurnState = "submitted" | "running" | "completed" | "failed" | "interrupted" | "cancelled";

/** One turn of the run, as its events name it: what the conversation view lays out turn by turn. */
export interface TurnFacts {
  turnId: string;
  state: TurnState;
  /** Its items (the reducer's item keys) and tool executions (by executionId), in order of first appearance. */
  items: string[];
  /** Its runtime requests, in the order asked. */
  requests: string[];
}

/** How many failure messages and diagnostics a run keeps: the last ones tell why it ended. */
const KEEP = 20;
/** The turns a run keeps (the last ones), and the item and request ids each keeps (its last ones). */
export const KEEP_TURNS = 20;
export const KEEP_TURN_IDS = 200;

/**
 * What a run's readers need beyond the reducer's snapshot, folded event by event so that nothing
 * re-reads the run: its list line's facts, its requests as asked, and its failure facts.
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
  /** The ids of the requests asked and not yet resolved, expired or cancelled. */
  pending: Set<string>;
  failure: FailureFacts;
  /** Its turns, in event order (the last KEEP_TURNS). */
  turns: TurnFacts[];
  /** Its workspace diffs, in order of first appearance (the last KEEP_DIFFS), each with the start of its text. */
  fileChanges: FileChangeEntry[];
}

export const emptyFacts = (): RunFacts => ({
  eventCount: 0,
  firstAt: null,
  lastAt: null,
  harness: null,
  terminal: null,
  proposedDisposition: null,
  requests: new Map(),
  pending: new Set(),
  failure: { messages: [], diagnostics: [], harnessExit: null },
  turns: [],
  fileChanges: [],
});

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const stringOr = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);
const pushBounded = <T>(list: T[], item: T, keep = KEEP) => {
  list.push(item);
  if (list.length > keep) list.shift();
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

/** A copy that a fold may change without touching `facts` (a cached value others may be reading). */
export const copyFacts = (facts: RunFacts): RunFacts => ({
  ...facts,
  requests: new Map(facts.requests),
  pending: new Set(facts.pending),
  failure: {
    messages: [...facts.failure.messages],
    diagnostics: [...facts.failure.diagnostics],
    harnessExit: facts.failure.harnessExit,
  },
  turns: facts.turns.map((t) => ({ ...t, items: [...t.items], requests: [...t.requests] })),
  fileChanges: [...facts.fileChanges],
});

/**
 * A run's line in a list: its harness, first and last event times, terminal state, result's
 * disposition, and how many requests wait for an answer (none once it has ended: nobody is asked).
 */
export function factsSummary(facts: RunFacts) {
  const stringOf = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);
  return {
    harness: facts.harness,
    startedAt: facts.firstAt,
    lastEventAt: facts.lastAt,
    terminalState: stringOf(facts.terminal?.runTerminalState),
    disposition: stringOf(facts.terminal?.reportedWorkDisposition) ?? facts.proposedDisposition,
    pendingRequests: facts.terminal === null ? facts.pending.size : 0,
  };
}

/** Folds `events` (the run's next ones, in delivery order) into `facts`, in place. */
export function foldFacts(facts: RunFacts, events: readonly PrpEvent[]): void {
  for (const e of events) {
    const p = record(e.payload);
    facts.eventCount++;
    facts.firstAt ??= e.emittedAt;
    facts.lastAt = e.emittedAt;
    foldTurn(facts.turns, e, p);
    foldFileChange(facts.fileChanges, e, p);
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
        if (detail) {
          facts.requests.set(detail.requestId, detail);
          facts.pending.add(detail.requestId);
        }
        break;
      }
      case "runtime_request.resolved":
      case "runtime_request.expired":
      case "runtime_request.cancelled":
        facts.pending.delete(requestIdOf(p));
        break;
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

const TURN_STATES: Record<string, TurnState> = {
  "turn.submitted": "submitted",
  "turn.started": "running",
  "turn.completed": "completed",
  "turn.failed": "failed",
  "turn.interrupted": "interrupted",
  "turn.cancelled": "cancelled",
};

/** The id a conversation shows an event under: the reducer's item key, or a tool call's executionId. */
function itemKey(e: PrpEvent, p: Record<string, unknown>): string | null {
  if (e.eventType.startsWith("item."))
    return stringOr((e as { providerItemId?: unknown }).providerItemId) ?? stringOr(e.itemId);
  if (e.eventType.startsWith("tool.execution.")) return stringOr(p.executionId);
  return null;
}

/**
 * The turn the event names (its envelope's turnId), else the latest turn: its state, and the
 * items and requests it brought, each id once.
 */
function foldTurn(turns: TurnFacts[], e: PrpEvent, p: Record<string, unknown>): void {
  const turnId = stringOr(e.turnId);
  let turn = turnId === null ? turns.at(-1) : turns.find((t) => t.turnId === turnId);
  if (!turn && turnId !== null) {
    turn = { turnId, state: "submitted", items: [], requests: [] };
    pushBounded(turns, turn, KEEP_TURNS);
  }
  if (!turn) return;
  const state = TURN_STATES[e.eventType];
  if (state) turn.state = state;
  const item = itemKey(e, p);
  if (item !== null && !turn.items.includes(item)) pushBounded(turn.items, item, KEEP_TURN_IDS);
  const request = e.eventType === "runtime_request.created" ? requestDetail(p)?.requestId : undefined;
  if (request && !turn.requests.includes(request)) pushBounded(turn.requests, request, KEEP_TURN_IDS);
}
