/**
 * `npm run bench:codec`: events per second through `decode`, against the bare compiled
 * validator on pre-parsed objects and against JSON.parse alone, on the same generated events.
 * Target: decode costs no more than 1.5x (JSON.parse + bare validation).
 */
import { decode } from "../src/contract/index.js";
import { validators } from "../src/contract/validators.js";
import { compare, fmt, report, type Rate } from "./measure.js";

const TYPES = [
  "item.delta",
  "item.started",
  "item.completed",
  "turn.started",
  "runtime.phase.changed",
  "tool.execution.progressed",
];
function sampleEvents(count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const type = TYPES[i % TYPES.length]!;
    const payload =
      type === "tool.execution.progressed"
        ? {
            schema: "paperclip.tool.execution.v1",
            executionId: `exec_${i}`,
            transport: "process",
            operation: "execute",
            status: "running",
            output: "line of output\n".repeat(4),
            outputBytes: 60,
            outputTruncated: false,
            outputDigest: null,
          }
        : { kind: "assistant_message", text: `token ${i} `.repeat(8) };
    return JSON.stringify({
      schema: "paperclip.prp.event.v1",
      sourceEventId: `event_${i}`,
      sourceSeq: i + 1,
      sourceInstanceId: "runner_bench",
      sourceKind: "runner",
      runId: "run_bench",
      normalizedSessionId: "session_bench",
      turnId: "turn_1",
      itemId: `item_${i % 50}`,
      eventType: type,
      schemaVersion: 1,
      priority: type === "item.delta" ? 2 : 1,
      emittedAt: "2026-08-07T12:00:00.000Z",
      payload,
    });
  });
}

const texts = sampleEvents(2_000);
const parsed = texts.map((t) => JSON.parse(t));
const validate = validators.event_v1;
for (const t of texts) if (!decode(t).ok) throw new Error(`bench sample is invalid: ${t}`);

const [parse, bare, both, full] = compare([
  { name: "JSON.parse", items: texts, fn: (t: string) => JSON.parse(t) },
  { name: "bare validator (pre-parsed)", items: parsed, fn: (v: unknown) => validate(v) },
  { name: "JSON.parse + bare validator", items: texts, fn: (t: string) => validate(JSON.parse(t)) },
  { name: "decode (text -> typed value)", items: texts, fn: (t: string) => decode(t).ok },
]) as [Rate, Rate, Rate, Rate];

report(
  `codec: ${texts.length} v1 events, ${fmt(texts.reduce((n, t) => n + t.length, 0) / texts.length)} bytes on average`,
  [parse, bare, both, full],
);
const cost = both.perSecond / full.perSecond;
console.log(
  `decode costs ${cost.toFixed(2)}x (JSON.parse + bare validation); target <= 1.50x: ${cost <= 1.5 ? "met" : "NOT met"}`,
);
console.log(
  `decode vs bare validator: ${(bare.perSecond / full.perSecond).toFixed(2)}x; decode vs JSON.parse alone: ${(parse.perSecond / full.perSecond).toFixed(2)}x`,
);
