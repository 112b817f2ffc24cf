import type { PRPRunTerminal, PRPStructuredRunResult } from "../contract/index.js";
import type {
  CredentialRevision,
  RuntimeActivityRecord,
  SequenceGap,
  SessionItem,
  SessionRequest,
  SessionSnapshot,
  TimelineEntry,
  UsageTotals,
} from "./snapshot.js";

/**
 * The reducer's working copy of a snapshot, indexed so that an event costs O(1) beyond copying
 * its own payload (and listing a gap it opens): Sets and Maps instead of array scans. It is
 * private to one reduction: `thaw` builds it from a deep copy of the input snapshot, events
 * mutate it, and `freeze` hands its contents to the new snapshot once, so no input is ever
 * touched and no snapshot is cloned per event.
 */
export interface ReducerState {
  base: Pick<SessionSnapshot, "schema" | "fixtureName" | "identity" | "capabilities">;
  runPhase: string;
  sessionState: SessionSnapshot["sessionState"];
  turnState: SessionSnapshot["turnState"];
  activeTurnId: string | null;
  items: Map<string, SessionItem>;
  requests: Map<string, SessionRequest>;
  proposedResult: PRPStructuredRunResult | null;
  terminal: PRPRunTerminal | null;
  timeline: TimelineEntry[];
  cursors: Map<string, number>;
  /** Insertion-ordered, so it also gives processedEventIds in the order they were applied. */
  processed: Set<string>;
  duplicates: Set<string>;
  outOfOrder: Set<string>;
  gaps: SequenceGap[];
  beyond: BeyondV1State;
}

/** The sections beyond v1 (see SessionSnapshot); undefined or empty means "never happened". */
export interface BeyondV1State {
  sessionCapabilities?: Record<string, unknown>;
  sessionGoal?: NonNullable<SessionSnapshot["sessionGoal"]>;
  usage?: UsageTotals;
  plans: Map<string, Record<string, unknown>>;
  toolExecutions: Map<string, Record<string, unknown>>;
  credentials: Map<string, CredentialRevision>;
  runtimeActivity: RuntimeActivityRecord[];
}

const byKey = <T>(values: T[] | undefined, key: (value: T) => string): Map<string, T> =>
  new Map((values ?? []).map((v) => [key(v), v]));

export const credentialKey = (provider: string, bindingId: string): string => JSON.stringify([provider, bindingId]);

export function thaw(snapshot: SessionSnapshot): ReducerState {
  const s = structuredClone(snapshot);
  return {
    base: { schema: s.schema, fixtureName: s.fixtureName, identity: s.identity, capabilities: s.capabilities },
    runPhase: s.runPhase,
    sessionState: s.sessionState,
    turnState: s.turnState,
    activeTurnId: s.activeTurnId,
    items: byKey(s.items, (i) => i.itemId),
    requests: byKey(s.requests, (r) => r.requestId),
    proposedResult: s.proposedResult,
    terminal: s.terminal,
    timeline: s.timeline,
    cursors: new Map(Object.entries(s.sourceCursors)),
    processed: new Set(s.processedEventIds),
    duplicates: new Set(s.duplicateEventIds),
    outOfOrder: new Set(s.outOfOrderEventIds),
    gaps: s.gaps,
    beyond: {
      ...(s.sessionCapabilities ? { sessionCapabilities: s.sessionCapabilities } : {}),
      ...(s.sessionGoal ? { sessionGoal: s.sessionGoal } : {}),
      ...(s.usage ? { usage: s.usage } : {}),
      plans: byKey(s.plans, (p) => p.planId as string),
      toolExecutions: byKey(s.toolExecutions, (t) => t.executionId as string),
      credentials: byKey(s.credentials, (c) => credentialKey(c.provider, c.bindingId)),
      runtimeActivity: s.runtimeActivity ?? [],
    },
  };
}

/** The snapshot of a state, keys in wire.md §15.2 order. The state must not be used afterwards. */
export function freeze(state: ReducerState): SessionSnapshot {
  const b = state.beyond;
  return {
    ...state.base,
    runPhase: state.runPhase,
    sessionState: state.sessionState,
    turnState: state.turnState,
    activeTurnId: state.activeTurnId,
    items: [...state.items.values()],
    requests: [...state.requests.values()],
    proposedResult: state.proposedResult,
    terminal: state.terminal,
    timeline: state.timeline,
    sourceCursors: Object.fromEntries(state.cursors),
    processedEventIds: [...state.processed],
    duplicateEventIds: [...state.duplicates].sort(),
    outOfOrderEventIds: [...state.outOfOrder],
    gaps: state.gaps,
    integrity: state.gaps.length > 0 || state.outOfOrder.size > 0 ? "gap_detected" : "complete",
    ...(b.sessionCapabilities ? { sessionCapabilities: b.sessionCapabilities } : {}),
    ...(b.sessionGoal ? { sessionGoal: b.sessionGoal } : {}),
    ...(b.usage ? { usage: b.usage } : {}),
    ...(b.plans.size > 0 ? { plans: [...b.plans.values()] } : {}),
    ...(b.toolExecutions.size > 0 ? { toolExecutions: [...b.toolExecutions.values()] } : {}),
    ...(b.credentials.size > 0 ? { credentials: [...b.credentials.values()] } : {}),
    ...(b.runtimeActivity.length > 0 ? { runtimeActivity: b.runtimeActivity } : {}),
  };
}
