import type { FastifyInstance } from "fastify";
import { Credentials } from "../authority/credentials.js";
import { MAX_BOOTSTRAP_TTL_MS } from "../authority/limits.js";
import type { RunQuery, RunSnapshot, RunState } from "../authority/store.js";
import { durableRunnerArgs } from "../runner/spawn.js";
import { RUNNER_CONNECT_PATH_PREFIX } from "../transport/upgrade-server.js";
import { tokenOf } from "./auth.js";
import { writableStore, type ApiContext, type ApiStore } from "./context.js";
import { createRunRequest, runIdSuffix, type RunSpec } from "./create-run.js";
import { harnessArgs } from "./harness-args.js";
import { identityWithSuffix } from "../authority/identity.js";
import { ApiError, refusal } from "./errors.js";
import { idempotencyKey } from "./idempotency.js";
import { MAX_RUN_PAGE } from "./limits.js";
import { runBody, runSummary } from "./run-view.js";
import { queueFacts } from "./dispatch-view.js";
import { RUN_PARAMS, apiSchema } from "./validation.js";
import { withRequestSpan } from "../telemetry/request-span.js";

const RUN_QUERY = {
  type: "object",
  additionalProperties: false,
  properties: { upto: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER } },
} as const;

const LIST_QUERY = {
  type: "object",
  additionalProperties: false,
  properties: {
    state: { enum: ["queued", "claimed", "pending", "running", "ended"] },
    label: {
      type: "array",
      maxItems: 32,
      items: { type: "string", pattern: "^[a-z0-9][a-z0-9_.-]{0,62}:.*$", maxLength: 320 },
    },
    text: { type: "string", minLength: 1, maxLength: 256 },
    after: { type: "string", minLength: 1, maxLength: 512 },
    limit: { type: "integer", minimum: 1, maximum: MAX_RUN_PAGE },
  },
} as const;

export async function knownRun(store: Pick<ApiStore, "run">, runId: string): Promise<RunSnapshot> {
  const run = await store.run(runId);
  if (!run) throw new ApiError("unknown_run", `no run ${runId}`, "/runId");
  return run;
}

/** POST /v1/runs, GET /v1/runs, GET /v1/runs/{runId}, POST /v1/runs/{runId}/tickets. */
export function runRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { store } = ctx;

  app.post<{ Body: RunSpec }>(
    "/runs",
    { config: { scope: "operate" }, schema: { body: apiSchema("RunSpec") } },
    (request, reply) =>
      // The run keeps this request's span context: the runner a worker starts for it is its child.
      withRequestSpan("POST /v1/runs", request.headers, async ({ span, traceParent }) => {
        const token = tokenOf(request);
        const writable = writableStore(ctx);
        const key = idempotencyKey(request.headers);
        const identity = identityWithSuffix(runIdSuffix(token.tokenId, key));
        span.setAttribute("prp.run.id", identity.runId);
        const wanted = createRunRequest(request.body, identity, token.tokenId, ctx.now());
        if (!wanted.ok) throw refusal(wanted.error);
        const asked = traceParent ? { ...wanted.value, spec: { ...wanted.value.spec, traceParent } } : wanted.value;
        const created = await writable.createRun(asked);
        if (!created.ok) throw refusal(created.error);
        const { run, spec } = created.value;
        if (created.value.created) ctx.queue.wake();
        const body = await runBody(ctx, run, spec, spec.createdAtUnixMs);
        return reply.code(created.value.created ? 201 : 200).send(body);
      }),
  );

  app.get<{ Querystring: { state?: RunState; label?: string[]; text?: string; after?: string; limit?: number } }>(
    "/runs",
    { config: { scope: "read" }, schema: { querystring: LIST_QUERY } },
    async (request) => {
      const q = request.query;
      const query: RunQuery = { limit: q.limit ?? 100 };
      if (q.state) query.state = q.state;
      if (q.text !== undefined) query.text = q.text;
      if (q.after !== undefined) query.after = q.after;
      if (q.label) {
        query.labels = {};
        for (const pair of q.label) {
          const colon = pair.indexOf(":");
          query.labels[pair.slice(0, colon)] = pair.slice(colon + 1);
        }
      }
      const page = await store.listRuns(query);
      const [facts, queue] = await Promise.all([
        Promise.all(page.runs.map((r) => ctx.facts.facts(r.runId, r.ackedSourceSeq))),
        queueFacts(
          ctx,
          page.runs.map((r) => r.dispatch),
        ),
      ]);
      return { runs: page.runs.map((r, i) => runSummary(r, facts[i]!, queue)), next: page.next };
    },
  );

  app.get<{ Params: { runId: string }; Querystring: { upto?: number } }>(
    "/runs/:runId",
    { config: { scope: "read" }, schema: { params: RUN_PARAMS, querystring: RUN_QUERY } },
    async (request) => {
      const run = await knownRun(store, request.params.runId);
      const spec = await store.runSpec(run.identity.runId);
      return runBody(ctx, run, spec, run.createdAtUnixMs, request.query.upto);
    },
  );

  app.post<{ Params: { runId: string }; Body: { ttlMs?: number; stateDir?: string } | undefined }>(
    "/runs/:runId/tickets",
    {
      config: { scope: "admin" },
      schema: { params: RUN_PARAMS, body: apiSchema("TicketRequest") },
      // No body at all is the empty request: every member has a default.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const run = await knownRun(store, request.params.runId);
      const runId = run.identity.runId;
      if (run.terminalSourceSeq !== null)
        throw new ApiError("run_ended", `run ${runId} has ended: no runner will serve it again`, "/runId");
      const writable = writableStore(ctx);
      // A ticket by hand takes the run out of the queue, so that no worker starts it too.
      const taken = await writable.claimByHand(runId, ctx.now());
      if (!taken.ok) throw refusal(taken.error);
      const credentials = Credentials.create({ store: writable, now: ctx.now });
      if (!credentials.ok) throw refusal(credentials.error);
      const ticket = await credentials.value.issueBootstrapTicket(runId, request.body?.ttlMs ?? MAX_BOOTSTRAP_TTL_MS);
      if (!ticket.ok) throw refusal(ticket.error);
      const specRow = await store.runSpec(runId);
      const spec = specRow ? (JSON.parse(specRow.spec) as RunSpec) : null;
      const connectUrl = `${ctx.runnerConnectUrl}${RUNNER_CONNECT_PATH_PREFIX}${runId}`;
      const runnerArgs = durableRunnerArgs({
        connectUrl,
        stateDir: request.body?.stateDir ?? "<state-dir>",
        identity: run.identity,
        harnessArgs: harnessArgs(spec),
        protocolMax: run.protocolVersion,
      });
      return reply.code(201).send({
        runId,
        ticket: ticket.value.token,
        expiresAt: new Date(ticket.value.expiresAtUnixMs).toISOString(),
        connectUrl,
        runnerArgs,
        environment: { PAPERCLIP_RUNNER_BOOTSTRAP_TICKET: ticket.value.token },
      });
    },
  );
}
