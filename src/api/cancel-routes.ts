import type { FastifyInstance } from "fastify";
import { CommandQueue } from "../authority/commands.js";
import { tokenOf } from "./auth.js";
import { endedRunProblem } from "./command-checks.js";
import { writableStore, type ApiContext } from "./context.js";
import { refusal } from "./errors.js";
import { runBody } from "./run-view.js";
import { knownRun } from "./runs-routes.js";
import { RUN_PARAMS } from "./validation.js";

/**
 * POST /v1/runs/{runId}/cancel: a queued run ends at once, in the store's one transaction that
 * also stops any worker from claiming it; a run a runner holds (or may hold: claimed) gets
 * run.cancel queued for that runner, once, however often this is asked.
 */
export function cancelRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Params: { runId: string } }>(
    "/runs/:runId/cancel",
    { config: { scope: "operate" }, schema: { params: RUN_PARAMS } },
    async (request) => {
      tokenOf(request);
      const store = writableStore(ctx);
      const before = await knownRun(store, request.params.runId);
      const runId = before.identity.runId;
      const [dispatch] = await store.dispatch([runId]);
      const ended = endedRunProblem(before, dispatch ?? null);
      if (ended) throw refusal(ended);
      const dequeued = dispatch ? await store.cancelQueued(runId, ctx.now()) : undefined;
      if (dequeued && !dequeued.ok) throw refusal(dequeued.error);
      if (!dequeued?.value.cancelled) {
        // One cancel per run, whoever asks and how often: the id names it.
        const queued = await new CommandQueue({ store, now: ctx.now }).queueCommand(
          runId,
          "run.cancel",
          {},
          "command_api_cancel",
        );
        if (!queued.ok) throw refusal(queued.error);
        if (queued.value.created) ctx.commandQueued(runId);
      } else ctx.queue.wake();
      const run = await knownRun(store, runId);
      return runBody(ctx, run, await store.runSpec(runId), run.createdAtUnixMs);
    },
  );
}
