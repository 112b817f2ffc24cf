import { admit } from "../contract/admission.js";
import type { PrpEvent } from "../contract/kinds.js";
import { fail, ok, terminalCommitted, type AuthorityError, type Refusal, type Result } from "./errors.js";
import type { RunIdentity } from "./identity.js";
import type { AuthorityObserver } from "./authority-observer.js";
import { GroupCommit, MAX_GROUP_COMMIT } from "./group-commit.js";
import { recordRefusal } from "./refusal.js";
import { PerRunSerial } from "./serial.js";
import { storeFailure } from "./store-failure.js";
import type { AuthorityStore, RunCursor, StoreTransaction, WithinCommit } from "./store.js";

/**
 * The caller's durable commit of one event (§5.6 step 5): the ACK authority. It runs inside the
 * store's transaction that appends the event and advances the cursor, after that transaction's
 * checks passed: rows the caller writes through `transaction` commit atomically with the cursor,
 * so an event reaches them exactly once. If it throws, the whole transaction is rolled back and
 * no ACK is sent; the runner redelivers. It must not call the store itself (it holds the
 * store's only transaction), and work outside `transaction` (a message sent, another
 * database) still happens again on a redelivery after a failure.
 */
export type OnCommittedEvent = (
  event: PrpEvent,
  context: { runId: string; sourceSeq: number; transaction: StoreTransaction },
) => Promise<void> | void;

export interface EventIngestOptions {
  store: AuthorityStore;
  onCommittedEvent?: OnCommittedEvent;
  /** After a transaction has committed events: the runs they belong to (no transaction is open). */
  afterCommit?: (runIds: ReadonlySet<string>) => void;
  now?: () => number;
  observer?: AuthorityObserver;
}

/** What to do after one event: send `ack` (cumulative), which is the same for a redelivery. */
export interface Ingested {
  outcome: "committed" | "duplicate";
  sourceSeq: number;
  sourceEventId: string;
  ack: { ackedSourceSeq: number };
}

/** Events whose receipt names the run it belongs to (§6.5, wire.md §7.4). */
const CORRELATED_INPUTS = new Set(["semantic_tool.input", "mcp_app.tool_input"]);
const CORRELATION_FIELDS = ["runId", "normalizedSessionId", "turnId", "itemId"] as const;

/** An event accepted for commit; `outcome` settles once its group commit has ended. */
export type Staged = Result<{ outcome: Promise<Result<Ingested>> }>;

/**
 * A connection's events queued ahead of their commit: the next event is judged
 * against what is queued, so one run's events can share a group commit instead of each waiting
 * for the one before it to commit.
 */
interface Pipeline {
  connectionId: string;
  identity: RunIdentity;
  protocolVersion: number;
  /** The sourceSeq the next event must carry: one past the last one queued. */
  next: number;
  /** A run.terminal is queued: nothing may follow it. */
  terminal: boolean;
  /** The last queued event's outcome; it settles after every earlier one. */
  tail: Promise<Result<Ingested>>;
  /**
   * The first queued event that failed: the events behind it on this connection fail with it;
   * a resend of it or of an earlier one is judged against the store again.
   */
  failed: { sourceSeq: number; refusal: Refusal } | null;
}

/**
 * The server ingest order of runtime.md §5.6 and §6.2, independent of the socket:
 *   1. admit the PRP event: the codec, and a canonical JSON form (src/contract/admission.ts);
 *   2. sourceInstanceId, runId and normalizedSessionId (and turnId, itemId when present) equal
 *      the run identity; a semantic-tool or MCP-app input's correlation too;
 *   3. an id already in the committed window must be canonically identical: its delivery is
 *      counted and the current cursor is acknowledged again, nothing new committed;
 *   4. otherwise sourceSeq must be ackedSourceSeq + 1, with no run.terminal committed before
 *      it: a committed terminal is final (`event_after_terminal`);
 *   5–6. in one transaction re-check 4 and the connection, append the event to the run log and
 *      the window, advance the cursor and await onCommittedEvent, then return the cumulative
 *      ACK for the caller to send. That transaction is shared with the events of other runs
 *      that arrive in the same tick (group-commit.ts), each in its own savepoint; the ACK is
 *      returned only once it has committed.
 * Every refusal means: close the connection. A refusal changes no cursor or window; it leaves
 * a diagnostic, and a refused event (step 1) also counts as a malformed frame.
 *
 * Pipelining: while a connection's events are queued, its next event is checked in step 4
 * against the last one queued instead of the committed cursor, and queued at once; the store
 * re-checks step 4 (and the id's uniqueness of step 3) inside the commit, so nothing is
 * committed that the committed cursor would refuse. Anything but the next event (a redelivery,
 * a gap, another connection, or any event after a queued one failed) first waits for the queued
 * events to settle and is then judged against the store, as above. An event queued behind one
 * that failed is not committed (the store's step 4 refuses it) and gets that failure as its
 * own: nothing after a failure is acknowledged, and the runner resends from its last ACK.
 *
 * Calls for one run are staged in this process in call order; the caller passes the
 * connectionId its `reauthorize` returned, and a superseded connection is refused.
 */
export class EventIngest {
  private readonly store: AuthorityStore;
  private readonly onCommittedEvent: OnCommittedEvent | undefined;
  private readonly now: () => number;
  private readonly serial = new PerRunSerial();
  private readonly group: GroupCommit;
  private readonly pipelines = new Map<string, Pipeline>();

  constructor(options: EventIngestOptions) {
    this.store = options.store;
    this.onCommittedEvent = options.onCommittedEvent;
    this.now = options.now ?? Date.now;
    this.group = new GroupCommit(this.store, this.now, options.afterCommit, MAX_GROUP_COMMIT, options.observer);
  }

  /** Stages the event and waits for its outcome: the ACK to send, or the refusal. */
  async ingest(runId: string, connectionId: string, value: unknown): Promise<Result<Ingested>> {
    const staged = await this.stage(runId, connectionId, value);
    return staged.ok ? staged.value.outcome : staged;
  }

  /**
   * Judges the event and queues it for commit without waiting for the commit: a refusal now,
   * or the outcome to come. A store that fails (unreachable, read-only, full) is answered with
   * a typed refusal (store-failure.ts), not a throw: the connection closes and the runner
   * resends later.
   */
  stage(runId: string, connectionId: string, value: unknown): Promise<Staged> {
    return this.serial
      .run(runId, () => this.stageNow(runId, connectionId, value))
      .catch((err: unknown): Staged => ({ ok: false, error: storeFailure(err) }));
  }

  /** For the glue: a frame that was not JSON or not an envelope, counted like a refused event. */
  async recordMalformedFrame(runId: string, code: string, message: string): Promise<void> {
    await this.store.recordMalformedFrame(runId, { code, message }, this.now());
  }

  private async stageNow(runId: string, connectionId: string, value: unknown): Promise<Staged> {
    let pipeline = this.pipelines.get(runId);
    if (pipeline && pipeline.connectionId !== connectionId) pipeline = await this.settled(runId, pipeline);
    let cursor: RunCursor | null = null;
    if (!pipeline) {
      const run = await this.currentRun(runId, connectionId);
      if (!run.ok) return run;
      cursor = run.value;
    }

    // The runner's sink admits events by this same function: what it committed, this accepts.
    const admitted = admit("event", value);
    if (!admitted.ok) {
      const error = {
        code: "invalid_event" as const,
        path: admitted.error.path,
        message: `${admitted.error.code}: ${admitted.error.message}`,
      };
      await this.store.recordMalformedFrame(
        runId,
        { code: error.code, message: `${error.path || "/"}: ${error.message}` },
        this.now(),
      );
      return { ok: false, error };
    }
    const { value: event, canonical: envelope } = admitted;
    const { identity, protocolVersion } = pipeline ?? cursor!;
    // No envelope newer than the version this run's lease negotiated (wire.md O1): a v1 peer sent a v2 event.
    if (event.schemaVersion > protocolVersion) {
      return this.refuse(
        runId,
        fail(
          "invalid_event",
          "/schema",
          `a ${event.schema} envelope is newer than the negotiated protocol version ${protocolVersion}`,
        ),
      );
    }
    const mismatch = identityMismatch(event, identity) ?? correlationMismatch(event, identity);
    if (mismatch) return this.refuse(runId, { ok: false, error: mismatch });

    if (pipeline) {
      if (!pipeline.failed && event.sourceSeq === pipeline.next && !pipeline.terminal)
        return this.queue(runId, pipeline, event, envelope);
      await pipeline.tail;
      // Behind a failure on this connection, which closes for it: that failure, with no diagnostic of its own.
      if (pipeline.failed && event.sourceSeq > pipeline.failed.sourceSeq) return pipeline.failed.refusal;
      await this.settled(runId, pipeline);
      const run = await this.currentRun(runId, connectionId);
      if (!run.ok) return run;
      cursor = run.value;
    }
    if (!cursor) throw new Error("unreachable: the cursor is read above");

    const seen = await this.store.committedEvent(runId, event.sourceEventId);
    if (seen) {
      if (seen.envelope !== envelope)
        return this.refuse(
          runId,
          fail("duplicate_mismatch", "", `${event.sourceEventId} was committed with other content`),
        );
      const counted = await this.store.countRedelivery(runId, connectionId, event.sourceEventId, envelope);
      if (!counted.ok) return this.refuse(runId, counted);
      const duplicate: Ingested = {
        outcome: "duplicate",
        sourceSeq: seen.sourceSeq,
        sourceEventId: event.sourceEventId,
        ack: { ackedSourceSeq: counted.value.ackedSourceSeq },
      };
      return ok({ outcome: Promise.resolve(ok(duplicate)) });
    }

    const order = sequenceError(event.sourceSeq, cursor);
    if (order) return this.refuse(runId, { ok: false, error: order });
    const fresh: Pipeline = {
      connectionId,
      identity: cursor.identity,
      protocolVersion: cursor.protocolVersion,
      next: event.sourceSeq,
      terminal: false,
      tail: Promise.resolve(ok(NOTHING_BEFORE)),
      failed: null,
    };
    this.pipelines.set(runId, fresh);
    return this.queue(runId, fresh, event, envelope);
  }

  /** The run's cursor, if `connectionId` is its current connection. */
  private async currentRun(runId: string, connectionId: string): Promise<Result<RunCursor>> {
    const run = await this.store.runCursor(runId);
    if (!run) return fail("unknown_run", "/runId", `no run ${runId}`);
    if (run.currentConnectionId !== connectionId)
      return this.refuse(
        runId,
        fail("connection_superseded", "/connectionId", `${connectionId} is not the current connection of run ${runId}`),
      );
    return ok(run);
  }

  /** Waits for everything the pipeline queued to settle, then forgets it: the store is the record again. */
  private async settled(runId: string, pipeline: Pipeline): Promise<undefined> {
    await pipeline.tail;
    if (this.pipelines.get(runId) === pipeline) this.pipelines.delete(runId);
    return undefined;
  }

  private queue(runId: string, pipeline: Pipeline, event: PrpEvent, envelope: string): Staged {
    const before = pipeline.tail;
    pipeline.next = event.sourceSeq + 1;
    pipeline.terminal = event.eventType === "run.terminal";
    const committed = this.group.commit({
      runId,
      connectionId: pipeline.connectionId,
      event: {
        sourceSeq: event.sourceSeq,
        sourceEventId: event.sourceEventId,
        eventType: event.eventType,
        priority: event.priority,
        envelope,
      },
      ...(this.onCommittedEvent ? { withinCommit: withinCommit(this.onCommittedEvent, event, runId) } : {}),
    });
    const outcome = this.outcome(runId, pipeline, before, committed, event);
    pipeline.tail = outcome;
    // An idle run is forgotten, unless it failed: its next event is judged against the store.
    void outcome.then(() => {
      if (pipeline.tail === outcome && !pipeline.failed && this.pipelines.get(runId) === pipeline)
        this.pipelines.delete(runId);
    });
    return ok({ outcome });
  }

  /** Never rejects: a store that fails on the way is a typed refusal like any other. */
  private async outcome(
    runId: string,
    pipeline: Pipeline,
    before: Promise<Result<Ingested>>,
    committed: Promise<Result<{ ackedSourceSeq: number }>>,
    event: PrpEvent,
  ): Promise<Result<Ingested>> {
    let result: Result<{ ackedSourceSeq: number }>;
    let storeFailed = false;
    try {
      result = await committed;
    } catch (err) {
      result = { ok: false, error: storeFailure(err) };
      storeFailed = true;
    }
    const earlier = await before; // settled already: a run's events commit in queue order
    if (!earlier.ok) return earlier; // refused by the store's step 4 as a consequence: no diagnostic of its own
    if (!result.ok) {
      // The caller's own failure, and a failed transaction: no diagnostic is written, so nothing at all is persisted.
      const refusal: Refusal =
        storeFailed || result.error.code === "callback_failed"
          ? result
          : await recordRefusal(this.store, runId, result, this.now()).catch((err: unknown): Refusal => ({
              ok: false,
              error: storeFailure(err),
            }));
      pipeline.failed ??= { sourceSeq: event.sourceSeq, refusal };
      return refusal;
    }
    return ok({
      outcome: "committed",
      sourceSeq: event.sourceSeq,
      sourceEventId: event.sourceEventId,
      ack: { ackedSourceSeq: result.value.ackedSourceSeq },
    });
  }

  /** Leaves the refusal's diagnostic (§ quality bar: nothing refused silently) and returns it. */
  private refuse<T>(runId: string, refusal: Refusal): Promise<Result<T>> {
    return recordRefusal(this.store, runId, refusal, this.now());
  }
}

const withinCommit =
  (host: OnCommittedEvent, event: PrpEvent, runId: string): WithinCommit =>
  (transaction) =>
    host(event, { runId, sourceSeq: event.sourceSeq, transaction });

/** What a fresh pipeline's first event follows: nothing that could have failed. */
const NOTHING_BEFORE: Ingested = { outcome: "committed", sourceSeq: 0, sourceEventId: "", ack: { ackedSourceSeq: 0 } };

/** §5.6 step 2. The event's own identity fields against the run's; absent turn and item pass. */
function identityMismatch(event: PrpEvent, identity: RunIdentity): AuthorityError | null {
  const e = event as unknown as Record<string, unknown>;
  const required: Array<[string, string]> = [
    ["sourceInstanceId", identity.runnerInstanceId],
    ["runId", identity.runId],
    ["normalizedSessionId", identity.normalizedSessionId],
  ];
  for (const [field, expected] of required) {
    if (e[field] !== expected)
      return { code: "identity_mismatch", path: `/${field}`, message: `${field} is not this run's` };
  }
  for (const field of ["turnId", "itemId"] as const) {
    if (e[field] !== undefined && e[field] !== identity[field])
      return { code: "identity_mismatch", path: `/${field}`, message: `${field} is not this run's` };
  }
  return null;
}

/** §6.5: a semantic-tool or MCP-app input receipt must be correlated to this run. */
function correlationMismatch(event: PrpEvent, identity: RunIdentity): AuthorityError | null {
  if (!CORRELATED_INPUTS.has(event.eventType)) return null;
  const receipt = (event.payload as Record<string, unknown> | undefined)?.semantic_tool as
    Record<string, unknown> | undefined;
  const correlation = receipt?.correlation as Record<string, unknown> | undefined;
  for (const field of CORRELATION_FIELDS) {
    if (correlation?.[field] !== identity[field]) {
      return {
        code: "semantic_correlation_mismatch",
        path: `/payload/semantic_tool/correlation/${field}`,
        message: `the receipt's correlation ${field} is not this run's`,
      };
    }
  }
  return null;
}

/** §5.6 step 4: strictly contiguous, and nothing after the run's committed terminal. */
function sequenceError(sourceSeq: number, run: RunCursor): AuthorityError | null {
  if (run.terminalSourceSeq !== null && sourceSeq > run.terminalSourceSeq)
    return terminalCommitted(sourceSeq, run.terminalSourceSeq);
  if (sourceSeq <= run.ackedSourceSeq)
    return {
      code: "sequence_stale",
      path: "/sourceSeq",
      message: `sourceSeq ${sourceSeq} is at or before the committed ${run.ackedSourceSeq} and not in the window`,
    };
  if (sourceSeq !== run.ackedSourceSeq + 1)
    return {
      code: "sequence_gap",
      path: "/sourceSeq",
      message: `sourceSeq ${sourceSeq} is not the next one (${run.ackedSourceSeq + 1})`,
    };
  return null;
}
