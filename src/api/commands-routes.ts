import type { FastifyInstance } from "fastify";
import { CommandQueue } from "../authority/commands.js";
import { sha256Hex } from "../contract/digest.js";
import { tokenOf } from "./auth.js";
import { answerProblem, endedRunProblem } from "./command-checks.js";
import { writeRefusal, type ApiContext } from "./context.js";
import { ApiError, refusal } from "./errors.js";
import { idempotencyKey } from "./idempotency.js";
import { commandReceipt, sessionAndFacts } from "./run-view.js";
import { knownRun } from "./runs-routes.js";
import { RUN_PARAMS, apiSchema } from "./validation.js";
import { withRequestSpan } from "../telemetry/request-span.js";
import { MAX_ATTRIBUTE_CHARS } from "../telemetry/run-spans.js";

/** A retry's command id: the same token, run and Idempotency-Key name the same command. */
export const idempotentCommandId = (tokenId: string, runId: string, key: string): string =>
  `command_api_${sha256Hex(`${tokenId}\0${runId}\0${key}`).slice(0, 32)}`;

/**
 * POST /v1/runs/{runId}/commands: checked against the run (ended? for request.resolve: a
 * request it asked and nobody answered), then queued through the authority's CommandQueue,
 * whose contract codec has the last word. With an Idempotency-Key the command id is derived
 * from it, so the queue's idempotent re-queue answers a retry and refuses another body.
 */
export function commandRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { store } = ctx;
  // Without a store to write to (a replayed file), every command is refused before it is read further.
  const queue = "store" in ctx.writes ? new CommandQueue({ store: ctx.writes.store, now: ctx.now }) : undefined;
  app.post<{ Params: { runId: string }; Body: { type: string; payload: Record<string, unknown> } }>(
    "/runs/:runId/commands",
    { config: { scope: "operate" }, schema: { params: RUN_PARAMS, body: apiSchema("CommandRequest") } },
    (request, reply) =>
      withRequestSpan("POST /v1/runs/{runId}/commands", request.headers, async ({ span }) => {
        const token = tokenOf(request);
        const key = idempotencyKey(request.headers);
        const run = await knownRun(store, request.params.runId);
        const runId = run.identity.runId;
        span.setAttribute("prp.run.id", runId);
        span.setAttribute("prp.command.type", request.body.type.slice(0, MAX_ATTRIBUTE_CHARS));
        if (queue === undefined) throw writeRefusal(ctx);
        const { type, payload } = request.body;
        const commandId = key === undefined ? undefined : idempotentCommandId(token.tokenId, runId, key);
        // A retry of a command already queued is answered as queued, even once the run has ended.
        const existing = commandId === undefined ? undefined : await store.command(runId, commandId);
        if (!existing) {
          const [dispatch] = await store.dispatch([runId]);
          const ended = endedRunProblem(run, dispatch ?? null);
          if (ended) throw refusal(ended);
          if (type === "request.resolve") {
            const [{ session, facts }, commands] = await Promise.all([
              sessionAndFacts(ctx, runId, run.ackedSourceSeq),
              store.commands(runId),
            ]);
            const problem = answerProblem(session, commands, payload, (id) => facts.requests.get(id));
            if (problem) throw refusal(problem);
          }
        }
        const queued = await queue.queueCommand(runId, type, payload, commandId);
        if (!queued.ok) {
          if (queued.error.code === "command_conflict" && key !== undefined)
            throw new ApiError(
              "idempotency_key_reused",
              "this Idempotency-Key was used for another command on this run",
              "/headers/idempotency-key",
            );
          throw refusal(queued.error);
        }
        if (queued.value.created) ctx.commandQueued(runId);
        const row = await store.command(runId, queued.value.commandId);
        if (!row) throw new ApiError("internal_error", "the queued command is not in the store");
        span.setAttribute("prp.command.id", row.commandId);
        return reply.code(queued.value.created ? 201 : 200).send(commandReceipt(row, queued.value.created));
      }),
  );
}
