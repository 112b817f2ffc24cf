import { SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { contextFromTraceparent, traceparentOf } from "./trace-context.js";

/** An API request's span: `traceParent` is what a run it creates keeps, to parent its runner on (undefined when not tracing). */
export interface RequestSpan {
  span: Span;
  traceParent: string | undefined;
}

/**
 * Runs `work` inside a server span named `name`, the child of the request's W3C `traceparent`
 * header when it carries a valid one (a malformed one is ignored: the span starts a trace of its
 * own). An error thrown by `work` marks the span ERROR and goes on.
 */
export async function withRequestSpan<T>(
  name: string,
  headers: Record<string, unknown>,
  work: (request: RequestSpan) => Promise<T>,
): Promise<T> {
  const parent = contextFromTraceparent(headers.traceparent, headers.tracestate);
  const span = trace.getTracer("prp-authority").startSpan(name, { kind: SpanKind.SERVER }, parent);
  try {
    return await work({ span, traceParent: traceparentOf(trace.setSpan(parent, span)) });
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as { code?: string }).code ?? "error" });
    throw err;
  } finally {
    span.end();
  }
}
