import type { FastifyInstance } from "fastify";
import { mintTicket } from "../authority/credentials.js";
import { MAX_BOOTSTRAP_TTL_MS } from "../authority/limits.js";
import type { WorkerPollResult } from "../authority/store.js";
import type { WorkerPoll } from "../contract/api/generated/types.js";
import { RUNNER_CONNECT_PATH_PREFIX } from "../transport/upgrade-server.js";
import { workerOf } from "./auth.js";
import { writableStore, type ApiContext } from "./context.js";
import type { RunSpec } from "./create-run.js";
import { workerBody } from "./dispatch-view.js";
import { refusal } from "./errors.js";
import { harnessArgs } from "./harness-args.js";
import { apiSchema } from "./validation.js";

/** How often a held poll looks at the queue again: another instance's runs wake nobody here. */
const HELD_POLL_TICK_MS = 500;

/**
 * POST /v1/workers/poll, the worker's one call, and GET /v1/workers. The poll is one store
 * transaction (heartbeat, reports, take-backs, claims with their tickets); with nothing to
 * claim it is held up to `waitMs` and made again when a run is queued.
 */
export function workerRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Body: WorkerPoll }>(
    "/workers/poll",
    { config: { scope: "worker" }, schema: { body: apiSchema("WorkerPoll") } },
    async (request, reply) => {
      const worker = workerOf(request);
      const store = writableStore(ctx);
      const body = request.body;
      // The held answer ends when the worker goes away: its retry (same requestId) finds any claim made
      // meanwhile. The response's close, not the request's: the request closed once its body was read.
      const gone = new AbortController();
      reply.raw.once("close", () => gone.abort());
      const deadline = ctx.now() + (body.want > 0 && !body.draining ? (body.waitMs ?? 0) : 0);
      for (;;) {
        const tokens = new Map<string, { token: string; expiresAtUnixMs: number }>();
        const polled = await store.pollWorker({
          workerId: worker.workerId,
          requestId: body.requestId,
          labels: body.labels,
          agents: body.agents ?? [],
          maxRuns: body.maxRuns,
          draining: body.draining,
          held: body.held,
          want: body.want,
          exited: body.exited,
          released: body.released,
          nowMs: ctx.now(),
          maxAttempts: ctx.dispatch.maxAttempts,
          mintTicket: (runId, nowMs) => {
            const minted = mintTicket(runId, nowMs, MAX_BOOTSTRAP_TTL_MS);
            tokens.set(minted.ticket.credentialId, {
              token: minted.token,
              expiresAtUnixMs: minted.ticket.expiresAtUnixMs,
            });
            return minted.ticket;
          },
        });
        if (!polled.ok) throw refusal(polled.error);
        const result = polled.value;
        for (const { dispatch } of result.claims)
          if (result.claimedNow.includes(dispatch.runId) && dispatch.claimedAtUnixMs !== null)
            ctx.runClaimed(Math.max(0, dispatch.claimedAtUnixMs - dispatch.queuedAtUnixMs));
        // Slots freed by exits or take-backs may let another worker's held poll claim.
        if (body.exited.length > 0 || body.released.length > 0 || result.lost.length > 0) ctx.queue.wake();
        const wait = deadline - ctx.now();
        if (result.claims.length > 0 || wait <= 0 || gone.signal.aborted) return pollAnswer(ctx, result, tokens);
        await ctx.queue.wait(Math.min(wait, HELD_POLL_TICK_MS), gone.signal);
        // Gone while held: claim nothing more for a worker that will not read the answer.
        if (gone.signal.aborted) return pollAnswer(ctx, result, tokens);
      }
    },
  );

  app.get("/workers", { config: { scope: "read" } }, async () => {
    const [workers, caps] = await Promise.all([ctx.store.workers(), ctx.store.caps()]);
    const nowMs = ctx.now();
    return { workers: workers.map((w) => workerBody(w, nowMs, ctx.dispatch.graceMs)), caps };
  });
}

/** API_SCHEMAS.WorkerPollAnswer: each claim with its ticket (shown here once) and its runner's flags. */
function pollAnswer(
  ctx: ApiContext,
  result: WorkerPollResult,
  tokens: Map<string, { token: string; expiresAtUnixMs: number }>,
) {
  return {
    workerId: result.worker.workerId,
    heartbeatMs: ctx.dispatch.heartbeatMs,
    graceMs: ctx.dispatch.graceMs,
    claims: result.claims.map((claim) => {
      const spec = JSON.parse(claim.spec.spec) as RunSpec;
      const runId = claim.identity.runId;
      const ticket = tokens.get(claim.credentialId)!;
      return {
        runId,
        attempt: claim.dispatch.attempts,
        ticket: ticket.token,
        expiresAt: new Date(ticket.expiresAtUnixMs).toISOString(),
        connectUrl: `${ctx.runnerConnectUrl}${RUNNER_CONNECT_PATH_PREFIX}${runId}`,
        protocolMax: claim.protocolVersion,
        identity: claim.identity,
        harnessArgs: harnessArgs(spec),
        spec,
        ...(claim.spec.traceParent ? { traceParent: claim.spec.traceParent } : {}),
      };
    }),
    lost: result.lost,
  };
}
