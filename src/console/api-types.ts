/**
 * What the console's JSON API and event stream carry: shared by the server (src/console) and
 * the page (console/web), which imports these types rather than declaring its own.
 */
import type { PrpEvent } from "../contract/kinds.js";
import type { PRPQuestionSet } from "../contract/generated/types.js";
import type { SessionItem, SessionSnapshot } from "../reducer/snapshot.js";

/** One line of the runs list. */
export interface RunRow {
  runId: string;
  /** `live` until run.terminal is committed, then the run's terminal state (succeeded, failed, …). */
  state: string;
  /** The harness command the runner started (harness.starting), when it has. */
  harness: string | null;
  startedAt: string | null;
  durationMs: number | null;
  eventCount: number;
  /** The result's reportedWorkDisposition: the terminal's, else the proposed result's. */
  disposition: string | null;
}

/** One event of a run's timeline: its 1-based position in the run's delivery order. */
export interface TimelineEvent {
  position: number;
  event: PrpEvent;
}

/** A command queued for the run, as the authority stores it. */
export interface CommandReceipt {
  commandId: string;
  controllerSeq: number;
  type: string;
  /** For request.resolve: the request it answers. */
  requestId?: string;
  /** False when the same command was already queued (an idempotent re-send). */
  created?: boolean;
  /** The runner's result status (completed, failed, rejected, indeterminate); null while it is pending. */
  status: string | null;
  /** Whether the authority has sent it to the runner (at least once). */
  delivered?: boolean;
  /** The runner's words with a result that is not `completed`: its code and message. */
  reason?: string;
}

export interface ArtifactFile {
  name: string;
  bytes: number;
}

/** An item of the view: the tail of its text only, so that a long stream of deltas stays small. */
export interface ViewItem extends SessionItem {
  /** The full text's length; `text` holds at most its last VIEW_ITEM_TEXT characters. */
  textLength: number;
}

/**
 * The reduced session as the page gets it: without the per-event lists (timeline, processed
 * ids), which grow with every event and which the page reads from the timeline instead.
 */
export type ViewSession = Omit<SessionSnapshot, "timeline" | "processedEventIds" | "items"> & { items: ViewItem[] };

/** A pending request as the harness asked it: what the page needs to render its form. */
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

/** A run's page: what `GET /api/runs/ID` returns and what the stream's `view` message carries. */
export interface RunView {
  run: RunRow;
  /** The reduced session of the events up to `position`. */
  position: number;
  session: ViewSession;
  /** The pending requests' forms: their choices or question sets. */
  requests: RequestDetail[];
  failure: FailureFacts;
  commands: CommandReceipt[];
  /** The native execution bundle's files, when the console knows where the run's bundle is. */
  artifacts: ArtifactFile[];
  /** False for a replayed file: there is nobody to send a command to. */
  live: boolean;
}

/** A refusal, the same shape everywhere: what was refused, where, and what to do. */
export interface ApiRefusal {
  code: string;
  path: string;
  message: string;
}

export type ApiResult<T> = { ok: true; value: T } | { ok: false; error: ApiRefusal };

/** The commands a person may send from the page. */
export const CONSOLE_COMMANDS = ["request.resolve", "turn.interrupt", "run.cancel"] as const;
export type ConsoleCommand = (typeof CONSOLE_COMMANDS)[number];
