/**
 * What the console's JSON API and event stream carry: shared by the server (src/console) and
 * the page (console/web), which imports these types rather than declaring its own.
 */
import type { PrpEvent } from "../contract/kinds.js";
import type { SessionSnapshot } from "../reducer/snapshot.js";

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
  /** The runner's result status; null while it is pending. */
  status: string | null;
}

export interface ArtifactFile {
  name: string;
  bytes: number;
}

/** A run's page: what `GET /api/runs/ID` returns and what the stream's `session` message carries. */
export interface RunView {
  run: RunRow;
  /** The reduced session of the events up to `position`. */
  position: number;
  session: SessionSnapshot;
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
