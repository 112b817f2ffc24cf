import type { FastifyInstance } from "fastify";
import type { ApiContext } from "./context.js";
import { ApiError } from "./errors.js";
import { eventFilter, scanEvents } from "./event-filter.js";
import { MAX_EVENT_PAGE } from "./limits.js";
import { knownRun } from "./runs-routes.js";
import { resumePoint, SSE_HEADERS } from "./sse-frames.js";
import { RUN_PARAMS } from "./validation.js";

const EVENTS_QUERY = {
  type: "object",
  additionalProperties: false,
  properties: {
    after: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    limit: { type: "integer", minimum: 1, maximum: MAX_EVENT_PAGE },
    type: { type: "array", maxItems: 32, items: { type: "string", minLength: 1, maxLength: 1024 } },
    q: { type: "string", minLength: 1, maxLength: 256 },
  },
} as const;

const wantsStream = (accept: string | undefined): boolean => /(^|,)\s*text\/event-stream\b/i.test(accept ?? "");

/**
 * GET /v1/runs/{runId}/events: a page of committed events, or with `Accept: text/event-stream`
 * the live stream; `type=` and `q=` filter a page (event-filter.ts). The page's JSON is assembled around the stored envelope strings, so that
 * each event is the exact bytes the authority committed, never re-serialised.
 */
export function eventRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { store } = ctx;
  app.get<{ Params: { runId: string }; Querystring: { after?: number; limit?: number; type?: string[]; q?: string } }>(
    "/runs/:runId/events",
    { config: { scope: "read" }, schema: { params: RUN_PARAMS, querystring: EVENTS_QUERY } },
    async (request, reply) => {
      const run = await knownRun(store, request.params.runId);
      const runId = run.identity.runId;
      if (wantsStream(request.headers.accept)) {
        const after = resumePoint(request.headers["last-event-id"], request.query.after);
        if (after === undefined)
          throw new ApiError(
            "invalid_request",
            "Last-Event-ID must be an event sequence number",
            "/headers/last-event-id",
          );
        // The stream is written by the feed from here on; Fastify no longer answers this request.
        reply.hijack();
        // A stream is quiet between events: no idle-socket timeout of the server is for it.
        reply.raw.setTimeout(0);
        reply.raw.writeHead(200, { ...SSE_HEADERS, ...corsHeaders(reply.getHeaders()) });
        reply.raw.flushHeaders();
        await ctx.feed.follow(runId, after, reply.raw);
        return;
      }
      const after = request.query.after ?? 0;
      const limit = request.query.limit ?? MAX_EVENT_PAGE;
      const filter = eventFilter(request.query.type, request.query.q);
      const { rows, next } = filter
        ? await scanEvents((at, n) => store.eventLog(runId, at, n), filter, after, limit)
        : await store.eventLog(runId, after, limit).then((r) => ({ rows: r, next: r.at(-1)?.sourceSeq ?? after }));
      const ended = run.terminalSourceSeq !== null && next >= run.terminalSourceSeq;
      const events = rows.map((r) => `{"seq":${r.sourceSeq},"event":${r.envelope}}`).join(",");
      return reply
        .header("content-type", "application/json; charset=utf-8")
        .send(`{"events":[${events}],"next":${next},"ended":${ended}}`);
    },
  );
}

/** The CORS headers the plugin set on the reply, carried onto the hijacked stream. */
function corsHeaders(headers: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    if (name.startsWith("access-control-") || name === "vary") out[name] = String(value);
  return out;
}
