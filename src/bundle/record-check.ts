import { canonicalJson } from "../contract/canonical-json.js";
import { sha256Hex } from "../contract/digest.js";
import type { PrpEvent } from "../contract/kinds.js";

/**
 * Why a sequence of events is not the record of one run: the binding rules a committed record
 * keeps (the authority's ingest applies the same ones: wire.md §5, runtime.md §4.4).
 */
export type RecordProblemCode =
  | "event_after_terminal"
  | "second_terminal"
  | "missing_terminal"
  | "terminal_mismatch"
  | "duplicate_event_id"
  | "sequence_gap"
  | "sequence_repeat"
  | "run_mismatch"
  | "session_mismatch"
  | "source_mismatch"
  /** A line of a record stream that is not a record at all. */
  | "not_a_record"
  /** A record stream whose writer did not end as it does after a terminal: someone else may have written its end. */
  | "unconfirmed_end";

/** A refusal as a value: what is wrong, where (a JSON Pointer into the record), and what it means. */
export interface RecordProblem {
  code: RecordProblemCode;
  path: string;
  message: string;
}

export interface RecordCheckOptions {
  /** Where event `index` sits, as a JSON Pointer (a bundle's `/events/3`, a stream's `/stream/3`). */
  pathOf: (index: number) => string;
  /** The first event's sourceSeq, when the record must start there (a live run starts at 1); otherwise it starts where its first event is. */
  firstSeq?: number;
  /** The run and session the record must be of; otherwise those of its first event. */
  runId?: string;
  sessionId?: string;
  /**
   * The id the source gives the event at each sequence number, when it names events by their
   * number (the local runner does: event-sequencer.ts). Then an id is unique because its number
   * is, and the check keeps nothing per event; without it, it keeps a digest per id.
   */
  idOf?: (sourceSeq: number) => string;
}

const describe = (e: PrpEvent) => `${e.eventType} ${e.sourceEventId} (sourceSeq ${e.sourceSeq})`;

/**
 * The binding rules, applied one event at a time as a record arrives or is read: the same run,
 * session and source throughout; sourceSeq contiguous; every sourceEventId once (a committed
 * record holds none twice: a redelivered duplicate is acknowledged, never committed again, so
 * even an identical repeat is refused here); exactly one run.terminal, and nothing after it.
 * Memory: O(1) with `idOf`, else one digest per event.
 */
export class RecordCheck {
  private next: number | null;
  private runId: string | null;
  /** null: the record's events have no session; undefined: not known yet. */
  private sessionId: string | null | undefined;
  private source: string | null = null;
  private readonly seen: Map<string, string> | null;
  private terminalIndex: number | null = null;
  private given = 0;

  constructor(private readonly options: RecordCheckOptions) {
    this.next = options.firstSeq ?? null;
    this.runId = options.runId ?? null;
    this.sessionId = options.sessionId;
    this.seen = options.idOf ? null : new Map();
  }

  /** How many events the check has been given. */
  get count(): number {
    return this.given;
  }

  /** Index of the run.terminal seen so far, or null. */
  get terminal(): number | null {
    return this.terminalIndex;
  }

  /** The next event of the record; its problem, or null when it keeps every rule so far. */
  accept(event: PrpEvent): RecordProblem | null {
    const index = this.given++;
    const at = this.options.pathOf(index);
    const problem = (code: RecordProblemCode, member: string, message: string): RecordProblem => ({
      code,
      path: `${at}${member}`,
      message,
    });
    if (this.terminalIndex !== null) {
      return event.eventType === "run.terminal"
        ? problem(
            "second_terminal",
            "",
            `a second run.terminal, ${describe(event)}: a run has exactly one terminal, at ${this.options.pathOf(this.terminalIndex)}; this record was written by someone other than the runner alone`,
          )
        : problem(
            "event_after_terminal",
            "",
            `${describe(event)} comes after the run.terminal at ${this.options.pathOf(this.terminalIndex)}: nothing follows a run's terminal`,
          );
    }
    this.runId ??= event.runId;
    const sessionId = event.normalizedSessionId ?? null;
    if (this.sessionId === undefined) this.sessionId = sessionId;
    const source = `${event.sourceKind}:${event.sourceInstanceId}`;
    this.source ??= source;
    if (event.runId !== this.runId)
      return problem(
        "run_mismatch",
        "/runId",
        `${describe(event)} is of run ${event.runId}, not ${this.runId}: a record holds one run's events`,
      );
    if (sessionId !== this.sessionId)
      return problem(
        "session_mismatch",
        "/normalizedSessionId",
        `${describe(event)} is of session ${sessionId ?? "(none)"}, not ${this.sessionId ?? "(none)"}: a record holds one session's events`,
      );
    if (source !== this.source)
      return problem(
        "source_mismatch",
        "/sourceInstanceId",
        `${describe(event)} comes from ${source}, not ${this.source}: one source numbers a record`,
      );
    const repeat = this.repeatOf(event);
    if (repeat) return problem("duplicate_event_id", "/sourceEventId", repeat);
    const expected = this.next ?? event.sourceSeq;
    if (event.sourceSeq > expected) {
      this.next = event.sourceSeq + 1; // the check goes on past the gap, so one gap is one problem
      return problem(
        "sequence_gap",
        "/sourceSeq",
        `${describe(event)} follows sourceSeq ${expected - 1}: ${event.sourceSeq - expected} event(s) from ${expected} are missing`,
      );
    }
    if (event.sourceSeq < expected)
      return problem(
        "sequence_repeat",
        "/sourceSeq",
        `${describe(event)} goes back: sourceSeq ${expected} was expected; a sequence number is used once`,
      );
    this.next = expected + 1;
    if (event.eventType === "run.terminal") this.terminalIndex = index;
    return null;
  }

  /** After the last event: the record's problem, or null when it is whole. */
  finish(): RecordProblem | null {
    if (this.terminalIndex !== null) return null;
    return {
      code: "missing_terminal",
      path: this.options.pathOf(this.given),
      message: `the record ends after ${this.given} event(s) without a run.terminal: it is not a finished run`,
    };
  }

  /** Why the event's id is one the record already holds, or null. */
  private repeatOf(event: PrpEvent): string | null {
    const id = event.sourceEventId;
    const idOf = this.options.idOf;
    if (idOf) {
      return id === idOf(event.sourceSeq)
        ? null
        : `${describe(event)}: the source names sourceSeq ${event.sourceSeq} ${idOf(event.sourceSeq)}; another id is a repeat or a forgery`;
    }
    const digest = sha256Hex(canonicalJson(event));
    const earlier = this.seen!.get(id);
    if (earlier === undefined) {
      this.seen!.set(id, digest);
      return null;
    }
    return earlier === digest
      ? `${describe(event)} repeats an earlier event exactly: a stored record holds each event once (a redelivery is acknowledged, not committed twice)`
      : `${describe(event)} reuses the id of an earlier event with different content: a forgery, or a runner that broke its own numbering`;
  }
}

/**
 * Every binding problem of a whole record whose terminal is also stated apart (a bundle's
 * `terminal`): the first one per event, then what the end shows.
 */
export function recordProblems(
  events: readonly PrpEvent[],
  stated: { path: string; terminal: unknown } | null,
  options: RecordCheckOptions,
): RecordProblem[] {
  const check = new RecordCheck(options);
  const problems: RecordProblem[] = [];
  for (const event of events) {
    const problem = check.accept(event);
    if (problem) problems.push(problem);
  }
  const end = check.finish();
  if (end) problems.push(end);
  const at = check.terminal;
  if (stated && at !== null && canonicalJson(events[at]!.payload) !== canonicalJson(stated.terminal)) {
    problems.push({
      code: "terminal_mismatch",
      path: stated.path,
      message: `the terminal stated here differs from the payload of the record's run.terminal at ${options.pathOf(at)}: one of them was altered`,
    });
  }
  return problems;
}
