import { runStateOf } from "../authority/run-state.js";
import type { CommandRow, LoggedEvent, RunListEntry, RunSnapshot, RunSpecRow } from "../authority/store.js";
import type { QueueFacts } from "../authority/wait-reason.js";
import type { PrpEvent } from "../contract/kinds.js";
import { cutText } from "../contract/text-cut.js";
import { SessionDraft } from "../reducer/apply-event.js";
import { createSnapshot, type SessionSnapshot, type SnapshotOrigin } from "../reducer/snapshot.js";
import type { ApiContext, ApiStore } from "./context.js";
import { dispatchBody, queueFacts } from "./dispatch-view.js";
import { copyFacts, emptyFacts, factsSummary, foldFacts, type RequestDetail, type RunFacts } from "./run-facts.js";

type AuthorityStore = ApiStore;

/** Events read (and reduced) at once: a long run is taken in pages, never whole. */
const READ_PAGE = 1000;
/** The characters of an item's text a run's session carries: its end, where a streaming item grows. */
export const SESSION_ITEM_TEXT = 4000;

/** API_SCHEMAS.RunSummary of a run, with the facts of its events; `queue` says why a queued one waits. */
export function runSummary(entry: RunListEntry, facts: RunFacts, queue: QueueFacts | null) {
  return {
    runId: entry.runId,
    state: entry.state,
    protocolVersion: entry.protocolVersion,
    eventCount: entry.ackedSourceSeq,
    createdAt: new Date(entry.createdAtUnixMs).toISOString(),
    labels: entry.spec?.labels ?? {},
    priority: entry.spec?.priority ?? 0,
    spec: entry.spec ? (JSON.parse(entry.spec.spec) as unknown) : null,
    ...factsSummary(facts),
    dispatch: entry.dispatch ? dispatchBody(entry.dispatch, queue) : null,
  };
}

/** `code: message` of a stored command result (`{commandId, status, result: {code, message}}`). */
function resultReason(stored: string | null): string | undefined {
  const result = (JSON.parse(stored ?? "{}") as { result?: { code?: unknown; message?: unknown; reason?: unknown } })
    .result;
  const words = [result?.code, result?.message ?? result?.reason].filter((w) => typeof w === "string" && w !== "");
  return words.length > 0 ? words.join(": ") : undefined;
}

/** The most of a person's words (a turn.start's or turn.steer's text) a receipt repeats: as long as a run's prompt may be. */
export const RECEIPT_TEXT = 65_536;
const SAYS_TEXT = new Set(["turn.start", "turn.steer"]);

/** API_SCHEMAS.CommandReceipt of a stored command. */
export const commandReceipt = (c: CommandRow, created?: boolean) => {
  const payload = JSON.parse(c.payload) as { requestId?: unknown; text?: unknown };
  const requestId = c.type === "request.resolve" ? payload.requestId : undefined;
  const text =
    SAYS_TEXT.has(c.type) && typeof payload.text === "string" ? cutText(payload.text, RECEIPT_TEXT) : undefined;
  const reason = c.status !== null && c.status !== "completed" ? resultReason(c.result) : undefined;
  return {
    commandId: c.commandId,
    controllerSeq: c.controllerSeq,
    type: c.type,
    status: c.status,
    delivered: c.deliveryCount > 0,
    ...(created === undefined ? {} : { created }),
    ...(typeof requestId === "string" ? { requestId } : {}),
    ...(text !== undefined ? { text } : {}),
    ...(reason ? { reason } : {}),
  };
};

/** A private copy of a cached fold's value that a run's next events change in place, then the new value. */
interface Draft<T> {
  apply(events: PrpEvent[]): void;
  close(): T;
}

/** One cache's part in a read of a run's log: the events after `at` go to its draft. */
interface Folding<T> {
  at: number;
  feed(rows: LoggedEvent[], events: PrpEvent[]): void;
  end(): T;
}

/**
 * Reads the run's events after the lowest `at` of `folds` up to `upto`, a page at a time, each
 * page parsed once and fed to every fold: a cold read of a run's session and facts reads the
 * log once, and holds one page of events at a time, never the whole run.
 */
async function readLog(
  store: Pick<AuthorityStore, "eventLog">,
  runId: string,
  upto: number,
  folds: Array<Folding<unknown>>,
): Promise<void> {
  for (let at = Math.min(...folds.map((f) => f.at)); at < upto;) {
    const rows = await store.eventLog(runId, at, Math.min(READ_PAGE, upto - at));
    if (rows.length === 0) break;
    const events = rows.map((r) => JSON.parse(r.envelope) as PrpEvent);
    for (const fold of folds) fold.feed(rows, events);
    at = rows.at(-1)!.sourceSeq;
  }
}

/**
 * A value folded from each run's events, kept for the runs asked about most recently: a request
 * reads and applies only the events committed since the last one, never the whole run again.
 * A read copies the cached value once (`open`) and applies every new event to that copy (a
 * cached value may be in use by another request), so a cold read is linear in the run.
 */
export class FoldCache<T> {
  private readonly values = new Map<string, { value: T; upto: number }>();

  constructor(
    private readonly store: Pick<AuthorityStore, "eventLog">,
    private readonly initial: (runId: string) => T,
    private readonly open: (value: T) => Draft<T>,
    private readonly maxRuns: number,
  ) {}

  /** The value of the run's events 1…`upto` (its committed count when asked). */
  async read(runId: string, upto: number): Promise<T> {
    const folding = this.begin(runId, upto);
    await readLog(this.store, runId, upto, [folding]);
    return folding.end();
  }

  /** A read of the run up to `upto` from the cached value, fed by `readLog`; `end` keeps its value. */
  begin(runId: string, upto: number): Folding<T> {
    const cached = this.values.get(runId);
    const from = cached && cached.upto <= upto ? cached : { value: this.initial(runId), upto: 0 };
    let draft: Draft<T> | undefined;
    const folding: Folding<T> = {
      at: from.upto,
      feed: (rows, events) => {
        const last = rows.at(-1)!.sourceSeq;
        if (last <= folding.at) return;
        const first = rows.findIndex((r) => r.sourceSeq > folding.at);
        (draft ??= this.open(from.value)).apply(first === 0 ? events : events.slice(first));
        folding.at = last;
      },
      end: () => {
        const value = draft ? draft.close() : from.value;
        this.keep(runId, value, folding.at);
        return value;
      },
    };
    return folding;
  }

  private keep(runId: string, value: T, upto: number): void {
    const latest = this.values.get(runId);
    if (latest && latest.upto > upto) return;
    // Re-inserted, so the Map's order is least recently used first.
    this.values.delete(runId);
    this.values.set(runId, { value, upto });
    if (this.values.size > this.maxRuns) this.values.delete(this.values.keys().next().value!);
  }
}

/** The reducer's session of each run (GET /v1/runs/{runId} and the answer checks). */
export class SessionCache extends FoldCache<SessionSnapshot> {
  constructor(
    store: Pick<AuthorityStore, "eventLog">,
    maxRuns = 64,
    origin: (runId: string) => SnapshotOrigin = () => ({}),
  ) {
    super(
      store,
      (runId) => createSnapshot(origin(runId)),
      (snapshot) => new SessionDraft(snapshot),
      maxRuns,
    );
  }

  /** The session of the run's events 1…`upto` (its committed count when asked). */
  session(runId: string, upto: number): Promise<SessionSnapshot> {
    return this.read(runId, upto);
  }
}

/**
 * The facts of each run (run-facts.ts): small, so kept for many more runs than sessions, since
 * every run of a list page needs them.
 */
export class FactsCache extends FoldCache<RunFacts> {
  constructor(store: Pick<AuthorityStore, "eventLog">, maxRuns = 4096) {
    super(
      store,
      emptyFacts,
      (facts) => {
        const next = copyFacts(facts);
        return { apply: (events) => foldFacts(next, events), close: () => next };
      },
      maxRuns,
    );
  }

  facts(runId: string, upto: number): Promise<RunFacts> {
    return this.read(runId, upto);
  }
}

/** The run's session and facts of events 1…`upto`, reading the events neither has yet once for both. */
export async function sessionAndFacts(
  ctx: { store: Pick<AuthorityStore, "eventLog"> } & Pick<ApiContext, "sessions" | "facts">,
  runId: string,
  upto: number,
): Promise<{ session: SessionSnapshot; facts: RunFacts }> {
  const session = ctx.sessions.begin(runId, upto);
  const facts = ctx.facts.begin(runId, upto);
  await readLog(ctx.store, runId, upto, [session, facts]);
  return { session: session.end(), facts: facts.end() };
}

/**
 * API_SCHEMAS.Run: the run's summary, identity, its reduced session of events 1…`position`
 * without the per-event lists (the events themselves are at /events) and with each item's text
 * cut to its end, its result and terminal, the pending requests' forms, its failure facts, its
 * turns, and its commands.
 */
export async function runBody(
  ctx: Pick<ApiContext, "store" | "sessions" | "facts" | "dispatch" | "now">,
  run: RunSnapshot,
  spec: RunSpecRow | undefined,
  createdAtUnixMs: number,
  upto?: number,
) {
  const runId = run.identity.runId;
  const position = Math.min(upto ?? run.ackedSourceSeq, run.ackedSourceSeq);
  const { store } = ctx;
  const [{ session, facts }, runFacts, commands, dispatched] = await Promise.all([
    sessionAndFacts(ctx, runId, position),
    // The run's line stays the whole run's, whatever the position asked.
    position === run.ackedSourceSeq ? undefined : ctx.facts.facts(runId, run.ackedSourceSeq),
    store.commands(runId),
    store.dispatch([runId]),
  ]);
  const dispatch = dispatched[0] ?? null;
  const { timeline: _timeline, processedEventIds: _processed, items, ...rest } = session;
  const requests: RequestDetail[] = session.requests
    .filter((r) => r.status === "pending")
    .map(
      (r) =>
        facts.requests.get(r.requestId) ?? {
          requestId: r.requestId,
          type: r.type,
          prompt: r.prompt,
          choices: [],
          input: null,
        },
    );
  return {
    run: runSummary(
      {
        runId,
        state: runStateOf(run, dispatch),
        protocolVersion: run.protocolVersion,
        ackedSourceSeq: run.ackedSourceSeq,
        createdAtUnixMs,
        spec: spec ?? null,
        dispatch,
      },
      runFacts ?? facts,
      await queueFacts(ctx, [dispatch]),
    ),
    identity: run.identity,
    position,
    session: {
      ...rest,
      items: items.map((item) => ({
        ...item,
        text: item.text.slice(-SESSION_ITEM_TEXT),
        textLength: item.text.length,
      })),
    },
    result: (session.proposedResult as object | null) ?? null,
    terminal: (session.terminal as object | null) ?? null,
    requests,
    failure: facts.failure,
    turns: facts.turns,
    fileChanges: facts.fileChanges.map(({ bodyId: _bodyId, ...change }) => change),
    commands: commands.map((c) => commandReceipt(c)),
  };
}
