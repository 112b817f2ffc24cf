import { isDeepStrictEqual } from "node:util";
import type { PrpEvent } from "../contract/kinds.js";
import type { ScriptEmission } from "../harness/script-emissions.js";

/** What the durable runner adds to a harness payload: the count of deltas a coalesced one merges. */
const RUNNER_ADDED = ["coalescedDeltas"];
/** Events the runner reports about itself, never on a harness's behalf. */
const RUNNER_EVENTS = new Set([
  "workspace.ready",
  "session.starting",
  "session.reconciled",
  "turn.submitted",
  "run.terminal",
]);

function reportedByRunner(event: PrpEvent): boolean {
  if (/^(harness|runner)\./.test(event.eventType) || RUNNER_EVENTS.has(event.eventType)) return true;
  return (
    event.eventType === "runtime.phase.changed" &&
    (event.payload as { phase?: unknown }).phase === "workspace_preparing"
  );
}

/** What a committed event says in the script's terms. */
interface Seen {
  eventType: string;
  itemId: string | undefined;
  payload: Record<string, unknown>;
  sourceSeq: number;
  /** How many script deltas one coalesced item.delta carries. */
  carries: number;
}

/** The harness's own item id of a committed event: in durable mode the envelope's itemId is the run's, the harness's is its providerItemId. */
export function harnessItemId(event: PrpEvent): string | undefined {
  const envelope = event as { itemId?: string; providerItemId?: unknown };
  return typeof envelope.providerItemId === "string" ? envelope.providerItemId : envelope.itemId;
}

function seen(event: PrpEvent): Seen {
  const payload = event.payload as Record<string, unknown>;
  const coalesced =
    event.eventType === "item.delta" && typeof payload.coalescedDeltas === "number" ? payload.coalescedDeltas : 1;
  return {
    eventType: event.eventType,
    itemId: harnessItemId(event),
    payload: omit(payload, RUNNER_ADDED),
    sourceSeq: event.sourceSeq,
    carries: Math.max(1, coalesced),
  };
}

function omit(payload: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(payload).filter(([k]) => !keys.includes(k)));
}

const label = (e: { eventType: string; itemId?: string | undefined }): string =>
  e.itemId ? `${e.eventType} ${e.itemId}` : e.eventType;

/** Consecutive plain-text deltas of one item, as the runner's coalescer merges them; null if they cannot merge. */
function merged(run: ScriptEmission[]): ScriptEmission | null {
  const first = run[0]!;
  const plain = (e: ScriptEmission) =>
    e.eventType === "item.delta" &&
    e.itemId === first.itemId &&
    typeof e.payload.text === "string" &&
    Object.keys(e.payload).length === 1;
  if (!run.every(plain)) return null;
  return {
    eventType: "item.delta",
    ...(first.itemId ? { itemId: first.itemId } : {}),
    payload: { text: run.map((e) => e.payload.text as string).join("") },
  };
}

export interface ScriptDelivery {
  /** Script events that reached the host at least once. */
  delivered: number;
  reasons: string[];
}

/**
 * Compares the events a host committed with the events a script makes the runner report
 * (`scriptEmissions`), by event type, the harness's item id and payload — ignoring what the
 * runner adds, and taking a coalesced item.delta as the script deltas whose texts it joins.
 * Every script event must arrive exactly once and in script order; with `prefix` (the harness
 * was cut short) the ones that arrived must be the script's first ones, with no hole. Events
 * the runner reports about itself are not the script's and are skipped.
 */
export function scriptDelivery(
  expected: ScriptEmission[],
  committed: PrpEvent[],
  options: { prefix: boolean },
): ScriptDelivery {
  const deliveredAt: number[][] = expected.map(() => []);
  const altered = new Set<number>();
  const reasons: string[] = [];
  // What a committed event carrying `carries` script events should be, from script event `at` on.
  const wantAt = (at: number, carries: number): ScriptEmission | null => {
    if (at < 0 || at + carries > expected.length) return null;
    return carries === 1 ? expected[at]! : merged(expected.slice(at, at + carries));
  };
  const matchesAt = (s: Seen, at: number): boolean => {
    const want = wantAt(at, s.carries);
    if (!want || want.eventType !== s.eventType || want.itemId !== s.itemId) return false;
    const fromCommand = want.fromCommand ?? [];
    return isDeepStrictEqual(omit(s.payload, fromCommand), omit(want.payload, fromCommand));
  };
  let next = 0;
  for (const event of committed) {
    const s = seen(event);
    let at = -1;
    for (let j = next; j < expected.length && at < 0; j++) if (matchesAt(s, j)) at = j;
    if (at < 0) for (let j = next - s.carries; j >= 0 && at < 0; j--) if (matchesAt(s, j)) at = j;
    if (at >= 0) {
      if (at < next) {
        const first = deliveredAt[at]![0];
        reasons.push(
          first === undefined
            ? `out of order: ${label(s)} at sourceSeq ${s.sourceSeq} (expected #${at + 1}, after #${next})`
            : `duplicate: ${label(s)} at sourceSeq ${s.sourceSeq} (expected #${at + 1}, first at sourceSeq ${first})`,
        );
      }
      for (let j = at; j < at + s.carries; j++) deliveredAt[j]!.push(s.sourceSeq);
      next = Math.max(next, at + s.carries);
      continue;
    }
    if (reportedByRunner(event)) continue;
    // Where the next script event has this type and item, the event is that one, changed.
    const span = wantAt(next, s.carries) ? s.carries : 1;
    const want = wantAt(next, span);
    if (want && want.eventType === s.eventType && want.itemId === s.itemId) {
      const differ = [...new Set([...Object.keys(want.payload), ...Object.keys(s.payload)])].filter(
        (k) => !(want.fromCommand ?? []).includes(k) && !isDeepStrictEqual(want.payload[k], s.payload[k]),
      );
      reasons.push(
        `altered: ${label(s)} at sourceSeq ${s.sourceSeq} (expected #${next + 1}): payload ${differ.join(", ")} differs`,
      );
      for (let j = next; j < next + span; j++) altered.add(j);
      next += span;
      continue;
    }
    reasons.push(`unexpected: ${label(s)} at sourceSeq ${s.sourceSeq}: not in the script`);
  }
  // With `prefix`, script events past the last one that arrived were never played.
  const end = options.prefix ? next : expected.length;
  for (let i = 0; i < end; i++) {
    if (deliveredAt[i]!.length === 0 && !altered.has(i))
      reasons.push(`missing: ${label(expected[i]!)} (expected #${i + 1})`);
  }
  return { delivered: deliveredAt.filter((seqs) => seqs.length > 0).length, reasons };
}
