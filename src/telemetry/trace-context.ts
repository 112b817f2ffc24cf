import { context, propagation, ROOT_CONTEXT, type Context } from "@opentelemetry/api";

/** Longer than any valid traceparent plus tracestate (32 members): a longer header is not read at all. */
const MAX_HEADER_CHARS = 1_024;

/**
 * The parent context a W3C `traceparent` (and `tracestate`) names, through the registered
 * propagator. An absent, malformed or oversized header is no parent: never an error, never echoed.
 */
export function contextFromTraceparent(traceparent: unknown, tracestate?: unknown): Context {
  if (typeof traceparent !== "string" || traceparent.length > MAX_HEADER_CHARS) return ROOT_CONTEXT;
  const carrier: Record<string, string> = { traceparent };
  if (typeof tracestate === "string" && tracestate.length <= MAX_HEADER_CHARS) carrier.tracestate = tracestate;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/** The W3C `traceparent` of a context (by default the active one), or undefined when it has no recording span. */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent;
}
