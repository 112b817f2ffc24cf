import { runStateOf } from "../authority/run-state.js";
import type { CommandRow, RunListEntry, RunSnapshot, RunSpecRow } from "../authority/store.js";
import type { QueueFacts } from "../authority/wait-reason.js";
import type { PrpEvent } from "../contract/kinds.js";
import { cutText } from "../contract/text-cut.js";
import { applyEvents } from "../reducer/apply-event.js";
import { createSnapshot, type SessionSnapshot, type SnapshotOrigin } from "../reducer/snapshot.js";
import type { ApiContext, ApiStore } from "./context.js";
import { dispatchBody, queueFacts } from "./dispatch-view.js";
import { copyFacts, emptyFacts, factsSummary, foldFacts, type RequestDetail, type RunFacts } from "./run-facts.js";

type AuthorityStore = ApiStore;

/** Events read (and reduced) at once: a long run is taken in pages, never whole. */
const READ_PAGE = 1000;
/** The most events a fold holds parsed at once, applied together. */
const FOLD_BATCH = 25_000;
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

/**
 * A value folded from each run's events, kept for the runs asked about most recently: a request
 * reads and applies only the events committed since the last one, never the whole run again.
 * `apply` returns a new value (a cached one may be in use by another request).
 */
export class FoldCache<T> {
  private readonly values = new Map<string, { value: T; upto: number }>();

  constructor(
    private readonly store: Pick<AuthorityStore, "eventLog">,
    private readonly initial: (runId: string) => T,
    private readonly apply: (value: T, events: PrpEvent[]) => T,
    private readonly maxRuns: number,
  ) {}

  /** The value of the run's events 1…`upto` (its committed count when asked). */
  async read(runId: string, upto: number): Promise<T> {
    const cached = this.values.get(runId);
    let { value, upto: at } = cached && cached.upto <= upto ? cached : { value: this.initial(runId), upto: 0 };
    for (let more = true; more && at < upto;) {
      // Applied in batches that grow with the value: each `apply` copies the value (the
      // reducer's thaw), so a cold read of 100,000 events a page at a time made 100 copies of
      // a value up to 100,000 events long. Doubling, up to FOLD_BATCH, keeps it linear.
      const batch = Math.min(FOLD_BATCH, Math.max(READ_PAGE, at));
      const events: PrpEvent[] = [];
      while (events.length < batch && at < upto) {
        const rows = await this.store.eventLog(runId, at, Math.min(READ_PAGE, upto - at));
        if (rows.length === 0) {
          more = false;
          break;
        }
        for (const r of rows) events.push(JSON.parse(r.envelope) as PrpEvent);
        at = rows.at(-1)!.sourceSeq;
      }
      if (events.length > 0) value = this.apply(value, events);
    }
    const latest = this.values.get(runId);
    if (!latest || latest.upto <= at) {
      // Re-inserted, so the Map's order is least recently used first.
      this.values.delete(runId);
      this.values.set(runId, { value, upto: at });
      if (this.values.size > this.maxRuns) this.values.delete(this.values.keys().next().value!);
    }
    return value;
  }
}

/** The reducer's session of each run (GET /v1/runs/{runId} and the answer checks). */
export class SessionCache {
  private readonly cache: FoldCache<SessionSnapshot>;

  constructor(
    store: Pick<AuthorityStore, "eventLog">,
    maxRuns = 64,
    origin: (runId: string) => SnapshotOrigin = () => ({}),
  ) {
    this.cache = new FoldCache(store, (runId) => createSnapshot(origin(runId)), applyEvents, maxRuns);
  }

  /** The session of the run's events 1…`upto` (its committed count when asked). */
  session(runId: string, upto: number): Promise<SessionSnapshot> {
    return this.cache.read(runId, upto);
  }
}

/**
 * The facts of each run (run-facts.ts): small, so kept for many more runs than sessions, since
 * every run of a list page needs them.
 */
export class FactsCache {
  private readonly cache: FoldCache<RunFacts>;

  constructor(store: Pick<AuthorityStore, "eventLog">, maxRuns = 4096) {
    this.cache = new FoldCache(
      store,
      emptyFacts,
      (facts, events) => {
        const next = copyFacts(facts);
        foldFacts(next, events);
        return next;
      },
      maxRuns,
    );
  }

  facts(runId: string, upto: number): Promise<RunFacts> {
    return this.cache.read(runId, upto);
  }
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
  const [session, facts, runFacts, commands, dispatched] = await Promise.all([
    ctx.sessions.session(runId, position),
    ctx.facts.facts(runId, position),
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
