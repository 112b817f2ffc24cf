import type {
  PRPRunIdentity,
  PRPRunTerminal,
  PRPStructuredRunResult,
  PRPV1NegotiatedCapabilities,
  PRPV2NegotiatedCapabilities,
  SessionGoalSnapshot,
} from "../contract/index.js";

export const SNAPSHOT_SCHEMA = "paperclip.prp.session-snapshot.v1";

/**
 * A gap lists at most this many missing sequence numbers. A gap is always the contiguous range
 * `expected … received - 1`, so the cap loses nothing; it keeps one hostile `sourceSeq` near
 * 2^53 from making the reducer allocate an array of that length.
 */
export const MAX_LISTED_MISSING_SEQS = 4096;

export type Capabilities = PRPV1NegotiatedCapabilities | PRPV2NegotiatedCapabilities;
export type SessionState = "not_started" | "running" | "closed" | "failed";
export type TurnState = "not_started" | "running" | "completed" | "failed" | "interrupted" | "cancelled";
export type Integrity = "complete" | "gap_detected";

export interface TimelineEntry {
  position: number;
  sourceEventId: string;
  sourceSeq: number;
  eventType: string;
  emittedAt: string;
  itemId?: string;
  summary: string;
}

export interface SessionItem {
  itemId: string;
  kind: string;
  status: "running" | "completed" | "failed";
  text: string;
}

export interface SessionRequest {
  requestId: string;
  requestKind: string;
  type: string;
  status: string;
  prompt: string;
}

export interface SequenceGap {
  sourceKey: string;
  expected: number;
  received: number;
  /** Every missing seq, `expected` to `received - 1`, listing at most MAX_LISTED_MISSING_SEQS. */
  missing: number[];
}

/** One usage figure; null when a report did not give it as a finite number (unknown, not zero). */
export interface UsageMeasurement {
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  activeSeconds: number | null;
  requests: number | null;
  providerCostUsd: number | null;
}

export interface UsageTotals {
  /** usage.reported events applied. */
  reports: number;
  /**
   * The run's usage and cost: the sum of `runDelta` over the reports with
   * `runDeltaAvailable: true`; null until one arrives. A figure that one of them left unknown is
   * unknown (null) in the total.
   */
  runTotal: UsageMeasurement | null;
  /**
   * The latest report's `cumulative` figures. They are session-scoped and may include earlier
   * runs, so they are kept as reported: never summed, never relabelled as run usage (wire.md §12.1).
   */
  sessionCumulative: ({ provider: string | null; model: string | null } & UsageMeasurement) | null;
}

export interface CredentialRevision {
  provider: string;
  bindingId: string;
  /** The highest revision observed for this provider and binding; a lower one arriving later is stale. */
  revision: number;
  detection: string;
  /** The event that reported this revision: the identity a host deduplicates its reaction by. */
  sourceEventId: string;
}

export interface RuntimeActivityRecord {
  sourceEventId: string;
  namespace: string;
  activityKey: string;
}

/**
 * The reducer's state (`paperclip.prp.session-snapshot.v1`): the fields and key order of
 * wire.md §15.2, produced by the algorithm of runtime.md §3. `identity`, `capabilities` and
 * `fixtureName` are null for a bare event stream, which carries none of them.
 *
 * After `integrity` come the sections beyond v1. Each appears only once an event of its kind
 * has been applied, so the snapshot of a v1 run has exactly the v1 keys. In this order:
 *
 * - `sessionCapabilities`: the latest `session.capabilities.updated` payload (`sessionGoals`,
 *   and `turnControls` in v3), copied with unknown fields.
 * - `sessionGoal`: `{goal, lastEventType}` from `session.goal.snapshot` / `.updated` (the goal
 *   snapshot, or null) and `session.goal.cleared` (null).
 * - `usage`: usage and cost totals from `usage.reported` (UsageTotals).
 * - `plans`: the latest `plan.updated` payload per `planId` (each is a full replacement), in
 *   order of first appearance. A payload without a string `planId` is not projected.
 * - `toolExecutions`: per `executionId`, the `tool.execution.*` payloads merged field by field, so
 *   a later event updates status and output while earlier fields (such as `name`) stay; in order
 *   of first appearance. A payload without a string `executionId` is not projected.
 * - `credentials`: per provider and `bindingId`, the highest revision `auth.credentials.updated`
 *   reported (CredentialRevision), in order of first appearance.
 * - `runtimeActivity`: every `runtime.activity.recorded`, in order (RuntimeActivityRecord).
 */
export interface SessionSnapshot {
  schema: typeof SNAPSHOT_SCHEMA;
  fixtureName: string | null;
  identity: PRPRunIdentity | null;
  capabilities: Capabilities | null;
  runPhase: string;
  sessionState: SessionState;
  turnState: TurnState;
  activeTurnId: string | null;
  items: SessionItem[];
  requests: SessionRequest[];
  proposedResult: PRPStructuredRunResult | null;
  terminal: PRPRunTerminal | null;
  timeline: TimelineEntry[];
  sourceCursors: Record<string, number>;
  processedEventIds: string[];
  duplicateEventIds: string[];
  outOfOrderEventIds: string[];
  gaps: SequenceGap[];
  integrity: Integrity;
  sessionCapabilities?: Record<string, unknown>;
  sessionGoal?: { goal: SessionGoalSnapshot | null; lastEventType: string };
  usage?: UsageTotals;
  plans?: Array<Record<string, unknown>>;
  toolExecutions?: Array<Record<string, unknown>>;
  credentials?: CredentialRevision[];
  runtimeActivity?: RuntimeActivityRecord[];
}

export interface SnapshotOrigin {
  fixtureName?: string | null;
  identity?: PRPRunIdentity | null;
  capabilities?: Capabilities | null;
}

/** The state before any event: queued, nothing started. Copies identity and capabilities. */
export function createSnapshot(origin: SnapshotOrigin = {}): SessionSnapshot {
  return {
    schema: SNAPSHOT_SCHEMA,
    fixtureName: origin.fixtureName ?? null,
    identity: origin.identity ? structuredClone(origin.identity) : null,
    capabilities: origin.capabilities ? structuredClone(origin.capabilities) : null,
    runPhase: "queued",
    sessionState: "not_started",
    turnState: "not_started",
    activeTurnId: null,
    items: [],
    requests: [],
    proposedResult: null,
    terminal: null,
    timeline: [],
    sourceCursors: {},
    processedEventIds: [],
    duplicateEventIds: [],
    outOfOrderEventIds: [],
    gaps: [],
    integrity: "complete",
  };
}
