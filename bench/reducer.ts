/**
 * `npm run bench:reducer`: events per second through `reduceEvents` over a generated
 * 100,000-event stream, against JSON.parse of the same bytes; and the time for 1,000,000 events
 * over the time for 100,000, which stays near 10 while the reducer is linear, next to the same ratio
 * for a bare Set of the event ids.
 */
import type { PrpEvent } from "../src/contract/index.js";
import { reduceEvents } from "../src/reducer/index.js";
import { compare, fmt, report } from "./measure.js";

const AT = "2026-08-07T12:00:00.000Z";
const DELTAS_PER_ITEM = 16;

/** The body of event `i` of a run: turns of streamed assistant items, with tool progress and usage between them. */
function body(i: number): Pick<PrpEvent, "eventType" | "priority" | "payload"> & { turnId: string; itemId?: string } {
  const block = Math.floor(i / (DELTAS_PER_ITEM + 4));
  const at = i % (DELTAS_PER_ITEM + 4);
  const turnId = `turn_${Math.floor(block / 10)}`;
  const itemId = `item_${block}`;
  if (at === 0)
    return { eventType: "item.started", priority: 1, turnId, itemId, payload: { kind: "assistant_message", text: "" } };
  if (at <= DELTAS_PER_ITEM)
    return { eventType: "item.delta", priority: 2, turnId, itemId, payload: { text: `token ${i} ` } };
  if (at === DELTAS_PER_ITEM + 1)
    return {
      eventType: "item.completed",
      priority: 1,
      turnId,
      itemId,
      payload: { kind: "assistant_message", text: `message ${block}` },
    };
  if (at === DELTAS_PER_ITEM + 2) {
    return {
      eventType: "tool.execution.progressed",
      priority: 1,
      turnId,
      payload: {
        schema: "paperclip.tool.execution.v1",
        executionId: `exec_${block}`,
        transport: "process",
        operation: "execute",
        status: "running",
        output: "line of output\n",
        outputBytes: 15,
        outputTruncated: false,
        outputDigest: null,
      },
    };
  }
  const measurement = {
    inputTokens: 10,
    outputTokens: 5,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    activeSeconds: 1,
    requests: 1,
    providerCostUsd: 0.001,
  };
  return {
    eventType: "usage.reported",
    priority: 1,
    turnId,
    payload: {
      provider: "codex",
      model: "gpt",
      cumulative: measurement,
      runDelta: measurement,
      runDeltaAvailable: true,
    },
  };
}

function stream(count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      schema: "paperclip.prp.event.v1",
      sourceEventId: `event_${i}`,
      sourceSeq: i + 1,
      sourceInstanceId: "runner_bench",
      sourceKind: "runner",
      runId: "run_bench",
      normalizedSessionId: "session_bench",
      schemaVersion: 1,
      emittedAt: AT,
      ...body(i),
    }),
  );
}

const SMALL = 100_000;
const LARGE = 1_000_000;
const smallLines = stream(SMALL);
// Only the parsed events stay alive: a million retained lines would inflate every GC of the large run.
const large = stream(LARGE).map((line) => JSON.parse(line) as PrpEvent);
const small = large.slice(0, SMALL);
const reduce = (events: PrpEvent[]) => reduceEvents(null, null, events).timeline.length;

const [parse, reduced] = compare([
  { name: "JSON.parse (one line)", items: smallLines, fn: (line: string) => JSON.parse(line) },
  { name: `reduceEvents (${fmt(SMALL)}-event stream)`, items: [small], fn: reduce },
]);
const perEvent = { name: "reduceEvents, events", perSecond: reduced!.perSecond * SMALL };
report(
  `reducer: ${fmt(SMALL)} v1 events, ${fmt(smallLines.reduce((n, l) => n + l.length, 0) / SMALL)} bytes on average`,
  [parse!, perEvent],
);
console.log(
  `reduceEvents runs at ${(perEvent.perSecond / parse!.perSecond).toFixed(2)}x the event rate of JSON.parse on the same bytes`,
);

// Baseline for the scale ratio: a Set of the same ids, the least any duplicate check costs. Its
// own ratio shows what the machine's caches add at a million entries, independent of the reducer.
const idSet = (events: PrpEvent[]) => new Set(events.map((e) => e.sourceEventId)).size;
const [tenth, whole, setTenth, setWhole] = compare(
  [
    { name: `reduceEvents ${fmt(SMALL)}`, items: [small], fn: reduce },
    { name: `reduceEvents ${fmt(LARGE)}`, items: [large], fn: reduce },
    { name: `Set of ids ${fmt(SMALL)}`, items: [small], fn: idSet },
    { name: `Set of ids ${fmt(LARGE)}`, items: [large], fn: idSet },
  ],
  5,
  300,
);
console.log(
  `time(${fmt(LARGE)}) / time(${fmt(SMALL)}): reduceEvents ${(tenth!.perSecond / whole!.perSecond).toFixed(2)} (linear: near 10); a Set of the same ids ${(setTenth!.perSecond / setWhole!.perSecond).toFixed(2)}`,
);
