import type {
  AuthorityStore,
  CommandRow,
  RunListEntry,
  RunSnapshot,
  RunSpecRow,
  RunState,
} from "../authority/store.js";
import type { PrpEvent } from "../contract/kinds.js";
import { applyEvents } from "../reducer/apply-event.js";
import { createSnapshot, type SessionSnapshot } from "../reducer/snapshot.js";

/** Events read (and reduced) at once: a long run is taken in pages, never whole. */
const READ_PAGE = 1000;

export const runState = (run: Pick<RunSnapshot, "ackedSourceSeq" | "terminalSourceSeq">): RunState =>
  run.terminalSourceSeq !== null ? "ended" : run.ackedSourceSeq > 0 ? "running" : "pending";

/** API_SCHEMAS.RunSummary of a run. */
export function runSummary(entry: RunListEntry) {
  return {
    runId: entry.runId,
    state: entry.state,
    protocolVersion: entry.protocolVersion,
    eventCount: entry.ackedSourceSeq,
    createdAt: new Date(entry.createdAtUnixMs).toISOString(),
    labels: entry.spec?.labels ?? {},
    priority: entry.spec?.priority ?? 0,
    spec: entry.spec ? (JSON.parse(entry.spec.spec) as unknown) : null,
  };
}

/** API_SCHEMAS.CommandReceipt of a stored command. */
export const commandReceipt = (c: CommandRow, created?: boolean) => ({
  commandId: c.commandId,
  controllerSeq: c.controllerSeq,
  type: c.type,
  status: c.status,
  delivered: c.deliveryCount > 0,
  ...(created === undefined ? {} : { created }),
});

/**
 * The reducer's session of each run, kept for the runs asked about most recently: a request
 * reads and applies only the events committed since the last one, never the whole run again.
 */
export class SessionCache {
  private readonly sessions = new Map<string, { snapshot: SessionSnapshot; upto: number }>();

  constructor(
    private readonly store: Pick<AuthorityStore, "eventLog">,
    private readonly maxRuns = 64,
  ) {}

  /** The session of the run's events 1…`upto` (its committed count when asked). */
  async session(runId: string, upto: number): Promise<SessionSnapshot> {
    const cached = this.sessions.get(runId);
    let { snapshot, upto: at } = cached && cached.upto <= upto ? cached : { snapshot: createSnapshot({}), upto: 0 };
    while (at < upto) {
      const rows = await this.store.eventLog(runId, at, Math.min(READ_PAGE, upto - at));
      if (rows.length === 0) break;
      snapshot = applyEvents(
        snapshot,
        rows.map((r) => JSON.parse(r.envelope) as PrpEvent),
      );
      at = rows.at(-1)!.sourceSeq;
    }
    const latest = this.sessions.get(runId);
    if (!latest || latest.upto <= at) {
      // Re-inserted, so the Map's order is least recently used first.
      this.sessions.delete(runId);
      this.sessions.set(runId, { snapshot, upto: at });
      if (this.sessions.size > this.maxRuns) this.sessions.delete(this.sessions.keys().next().value!);
    }
    return snapshot;
  }
}

/**
 * API_SCHEMAS.Run: the run's summary, identity, its reduced session without the per-event lists
 * (the events themselves are at /events), its result and terminal, and its commands.
 */
export async function runBody(
  store: AuthorityStore,
  sessions: SessionCache,
  run: RunSnapshot,
  spec: RunSpecRow | undefined,
  createdAtUnixMs: number,
) {
  const runId = run.identity.runId;
  const session = await sessions.session(runId, run.ackedSourceSeq);
  const { timeline: _timeline, processedEventIds: _processed, ...rest } = session;
  const commands = await store.commands(runId);
  return {
    run: runSummary({
      runId,
      state: runState(run),
      protocolVersion: run.protocolVersion,
      ackedSourceSeq: run.ackedSourceSeq,
      createdAtUnixMs,
      spec: spec ?? null,
    }),
    identity: run.identity,
    session: rest,
    result: (session.proposedResult as object | null) ?? null,
    terminal: (session.terminal as object | null) ?? null,
    commands: commands.map((c) => commandReceipt(c)),
  };
}
