import type { PrpEvent } from "../contract/kinds.js";
import { applyEvents } from "../reducer/apply-event.js";
import { createSnapshot, type SessionSnapshot } from "../reducer/snapshot.js";
import type { CommandReceipt, RequestDetail, RunRow, RunView, TimelineEvent, ViewSession } from "./api-types.js";
import type { BundleFiles } from "./bundle-files.js";
import { emptyFacts, foldFacts, type RunFacts } from "./run-facts.js";
import { runRow } from "./run-row.js";
import type { RunSource } from "./run-source.js";

/** Events read (and reduced) at once: a long run is taken in pages, never whole. */
const READ_PAGE = 1000;
/** The newest events kept per run: pages following a live run are served them without a read. */
export const TAIL_EVENTS = 1000;
/** The characters of an item's text a view carries: its end, where a streaming item grows. */
export const VIEW_ITEM_TEXT = 4000;

/** What changed in one refresh: the runs with new events (or new), and whether the list changed. */
export interface Changes {
  runs: Set<string>;
}

/** One run as the book holds it: its reduction and facts so far, and only its newest events. */
interface Ledger {
  snapshot: SessionSnapshot;
  facts: RunFacts;
  tail: TimelineEvent[];
  commands: CommandReceipt[];
  commandText: string;
  /** Bumped by every change (events, command status): a view is rebuilt and re-sent only when it moves. */
  version: number;
  view?: { version: number; value: Omit<RunView, "artifacts"> };
}

/** The view's session: the snapshot without its per-event lists, and items' text cut to its end. */
function viewSession(snapshot: SessionSnapshot): ViewSession {
  const { timeline: _timeline, processedEventIds: _processed, items, ...rest } = snapshot;
  return {
    ...rest,
    items: items.map((item) => ({ ...item, text: item.text.slice(-VIEW_ITEM_TEXT), textLength: item.text.length })),
  };
}

/**
 * The console's knowledge of each run, read from the source incrementally: each refresh reads
 * only what was committed since the last and applies it to the run's cached reduction. Events
 * themselves are not kept beyond a bounded tail; older pages are read from the source on demand.
 */
export class RunBook {
  private readonly runs = new Map<string, Ledger>();

  constructor(
    readonly source: RunSource,
    private readonly bundles: BundleFiles | undefined,
  ) {}

  /** Reads what is new in the source; returns the runs that changed (new events or command status). */
  async refresh(): Promise<Changes> {
    const runs = new Set<string>();
    for (const runId of await this.source.runIds()) {
      let ledger = this.runs.get(runId);
      if (!ledger) {
        ledger = {
          snapshot: createSnapshot(this.source.origin(runId)),
          facts: emptyFacts(),
          tail: [],
          commands: [],
          commandText: "",
          version: 0,
        };
        this.runs.set(runId, ledger);
        runs.add(runId);
      }
      for (;;) {
        const fresh = (await this.source.eventsAfter(runId, ledger.facts.eventCount, READ_PAGE)) ?? [];
        if (fresh.length > 0) {
          this.take(ledger, fresh);
          runs.add(runId);
        }
        if (fresh.length < READ_PAGE) break;
      }
      // A command's result may come after run.terminal (the cancel that ended it): read until none is pending.
      const settled =
        ledger.commandText !== "" && ledger.facts.terminal !== null && ledger.commands.every((c) => c.status !== null);
      if (this.source.live && !settled) {
        const commands = await this.source.commands(runId);
        const text = JSON.stringify(commands);
        if (text !== ledger.commandText) {
          Object.assign(ledger, { commands, commandText: text, version: ledger.version + 1 });
          runs.add(runId);
        }
      }
    }
    return { runs };
  }

  /** Applies the run's next events to its reduction and facts, and keeps them in its tail. */
  private take(ledger: Ledger, events: PrpEvent[]): void {
    const start = ledger.facts.eventCount;
    ledger.snapshot = applyEvents(ledger.snapshot, events);
    foldFacts(ledger.facts, events);
    ledger.tail.push(...events.map((event, i) => ({ position: start + i + 1, event })));
    if (ledger.tail.length > TAIL_EVENTS) ledger.tail.splice(0, ledger.tail.length - TAIL_EVENTS);
    ledger.version++;
  }

  has(runId: string): boolean {
    return this.runs.has(runId);
  }

  ended(runId: string): boolean {
    return (this.runs.get(runId)?.facts.terminal ?? null) !== null;
  }

  /** How many events the book holds in memory, over every run: bounded by TAIL_EVENTS a run. */
  heldEvents(): number {
    let n = 0;
    for (const ledger of this.runs.values()) n += ledger.tail.length;
    return n;
  }

  /** Changes whenever the run's view would: a stream re-sends the view only when it moves. */
  version(runId: string): number {
    return this.runs.get(runId)?.version ?? -1;
  }

  /** The reduced session of every event read so far. */
  session(runId: string): SessionSnapshot | undefined {
    return this.runs.get(runId)?.snapshot;
  }

  /** A request as the harness asked it (runtime_request.created). */
  request(runId: string, requestId: string): RequestDetail | undefined {
    return this.runs.get(runId)?.facts.requests.get(requestId);
  }

  /** At most `limit` events after position `after` (1-based positions), from the tail or else the source. */
  async eventsAfter(runId: string, after: number, limit: number): Promise<TimelineEvent[]> {
    const ledger = this.runs.get(runId);
    if (!ledger) return [];
    const end = Math.min(ledger.facts.eventCount, after + limit);
    if (after >= end) return [];
    const first = ledger.tail[0]?.position ?? Infinity;
    if (after + 1 >= first) return ledger.tail.slice(after + 1 - first, end - first + 1);
    const events = (await this.source.eventsAfter(runId, after, end - after)) ?? [];
    return events.map((event, i) => ({ position: after + i + 1, event }));
  }

  rows(): RunRow[] {
    return [...this.runs]
      .map(([runId, ledger]) => runRow(runId, ledger.facts))
      .sort((a, b) => (b.startedAt ?? "").localeCompare(a.startedAt ?? "") || a.runId.localeCompare(b.runId));
  }

  /** The run's page at position `upto` (default: every event so far). */
  async view(runId: string, upto?: number): Promise<RunView> {
    const ledger = this.runs.get(runId);
    const count = ledger?.facts.eventCount ?? 0;
    const artifacts = this.bundles?.list(runId) ?? [];
    if (ledger && (upto === undefined || upto >= count)) {
      if (ledger.view?.version !== ledger.version)
        ledger.view = {
          version: ledger.version,
          value: this.build(runId, count, ledger.snapshot, ledger.facts, ledger.commands),
        };
      return { ...ledger.view.value, artifacts };
    }
    // An earlier step (a replay's stepper): reduced again from the source, up to it.
    const position = Math.max(0, Math.min(upto ?? 0, count));
    let snapshot = createSnapshot(this.source.origin(runId));
    const facts = emptyFacts();
    for (let at = 0; at < position;) {
      const events = (await this.source.eventsAfter(runId, at, Math.min(READ_PAGE, position - at))) ?? [];
      if (events.length === 0) break;
      snapshot = applyEvents(snapshot, events);
      foldFacts(facts, events);
      at += events.length;
    }
    const stepped = this.build(runId, position, snapshot, facts, ledger?.commands ?? []);
    // The run's line stays the whole run's: the stepper's bounds come from it.
    return { ...stepped, run: ledger ? runRow(runId, ledger.facts) : stepped.run, artifacts };
  }

  private build(
    runId: string,
    position: number,
    snapshot: SessionSnapshot,
    facts: RunFacts,
    commands: CommandReceipt[],
  ): Omit<RunView, "artifacts"> {
    const pending = snapshot.requests
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
      run: runRow(runId, facts),
      position,
      session: viewSession(snapshot),
      requests: pending,
      failure: facts.failure,
      commands,
      live: this.source.live,
    };
  }
}
