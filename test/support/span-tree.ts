import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";

/** A span as a test reads it, whether from the SDK's memory or from OTLP/JSON on the wire. */
export interface SeenSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
  error: boolean;
}

export function fromReadable(span: ReadableSpan): SeenSpan {
  const parent = span.parentSpanContext?.spanId;
  return {
    name: span.name,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    ...(parent ? { parentSpanId: parent } : {}),
    attributes: { ...span.attributes },
    error: span.status.code === 2,
  };
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  status?: { code?: number };
}

/** The spans of one OTLP/HTTP JSON export request body (ExportTraceServiceRequest). */
export function fromOtlpJson(body: unknown): SeenSpan[] {
  const resourceSpans = (body as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> })
    .resourceSpans;
  return (resourceSpans ?? []).flatMap((r) =>
    (r.scopeSpans ?? []).flatMap((s) =>
      (s.spans ?? []).map((span) => ({
        name: span.name,
        traceId: span.traceId,
        spanId: span.spanId,
        ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
        attributes: Object.fromEntries(
          (span.attributes ?? []).map((a) => [
            a.key,
            a.value.stringValue ?? a.value.intValue ?? a.value.boolValue ?? a.value.doubleValue,
          ]),
        ),
        error: span.status?.code === 2,
      })),
    ),
  );
}

/** What a run's span tree must hold. */
export interface RunTreeExpectation {
  runId: string;
  /** Item ids that must each have exactly one prp.tool_call under a turn. */
  toolCalls: string[];
  /** Command ids that must each have exactly one prp.command span. */
  commands: string[];
}

/**
 * Everything wrong with a run's spans: one prp.run carrying the run id; every other span of the
 * run in its trace, a prp.turn under the run, a prp.tool_call under a turn, a command under the
 * run or a turn; each expected tool call and command exactly once; no span id twice.
 */
export function runTreeProblems(spans: SeenSpan[], expect: RunTreeExpectation): string[] {
  const problems: string[] = [];
  const mine = spans.filter((s) => s.attributes["prp.run.id"] === expect.runId);
  const runs = mine.filter((s) => s.name === "prp.run");
  if (runs.length !== 1) return [`${runs.length} prp.run spans for ${expect.runId}, expected 1`];
  const run = runs[0]!;
  const ids = new Set<string>();
  for (const s of mine) {
    if (ids.has(s.spanId)) problems.push(`span id ${s.spanId} (${s.name}) seen twice`);
    ids.add(s.spanId);
    if (s.traceId !== run.traceId) problems.push(`${s.name} is in trace ${s.traceId}, not the run's ${run.traceId}`);
  }
  const byId = new Map(mine.map((s) => [s.spanId, s]));
  const parentName = (s: SeenSpan) => (s.parentSpanId ? byId.get(s.parentSpanId)?.name : undefined);
  for (const s of mine) {
    const parent = parentName(s);
    if (s.name === "prp.turn" && s.parentSpanId !== run.spanId) problems.push(`a prp.turn is not under prp.run`);
    if (s.name === "prp.tool_call" && parent !== "prp.turn")
      problems.push(`prp.tool_call ${String(s.attributes["prp.item.id"])} is under ${parent ?? "nothing of the run"}`);
    if (s.name.startsWith("prp.command ") && parent !== "prp.run" && parent !== "prp.turn")
      problems.push(`${s.name} is under ${parent ?? "nothing of the run"}`);
  }
  const count = (name: (s: SeenSpan) => boolean, key: string, id: string) =>
    mine.filter((s) => name(s) && s.attributes[key] === id).length;
  for (const item of expect.toolCalls) {
    const n = count((s) => s.name === "prp.tool_call", "prp.item.id", item);
    if (n !== 1) problems.push(`${n} prp.tool_call spans for ${item}, expected 1`);
  }
  for (const command of expect.commands) {
    const n = count((s) => s.name.startsWith("prp.command "), "prp.command.id", command);
    if (n !== 1) problems.push(`${n} prp.command spans for ${command}, expected 1`);
  }
  return problems;
}
