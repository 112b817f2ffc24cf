import type { FastifyRequest } from "fastify";
import type { ApiScope, ApiTokenRow, WorkerRow } from "../authority/store.js";
import type { Authenticate, AuthenticateWorker } from "./context.js";
import { ApiError, refusal } from "./errors.js";
import { scopeCovers } from "./tokens.js";
import { looksLikeWorkerCredential } from "./worker-credentials.js";

/** What a route needs of its caller: a token's scope, or a worker's credential. */
export type RouteScope = ApiScope | "worker";

declare module "fastify" {
  interface FastifyContextConfig {
    /** What the route needs of the caller; undefined: the route is public. */
    scope?: RouteScope;
  }
  interface FastifyRequest {
    /** The caller's token, once authenticated. */
    apiToken: ApiTokenRow | null;
    /** The calling worker, on the worker's route. */
    worker: WorkerRow | null;
  }
}

/**
 * The onRequest check of every route that declares a scope: a valid bearer token (401
 * otherwise) whose scope covers the route's (403), or on the worker's route a worker's
 * credential. It runs before the body is read, so an unauthenticated caller costs no parsing.
 */
export const requireToken =
  (authenticate: Authenticate, authenticateWorker: AuthenticateWorker, now: () => number) =>
  async (request: FastifyRequest): Promise<void> => {
    const scope = request.routeOptions.config.scope;
    if (scope === undefined) return;
    const authorization = request.headers.authorization;
    if (scope === "worker") {
      const worker = await authenticateWorker(authorization);
      if (!worker.ok) throw refusal(worker.error);
      request.worker = worker.value;
      return;
    }
    if (looksLikeWorkerCredential(authorization))
      throw new ApiError(
        "scope_insufficient",
        "a worker credential serves POST /v1/workers/poll only; use an API token (prp authority token create)",
      );
    const token = await authenticate(authorization, now());
    if (!token.ok) throw refusal(token.error);
    if (!scopeCovers(token.value.scope, scope))
      throw new ApiError(
        "scope_insufficient",
        `this needs a token of scope ${scope} or above; this token's scope is ${token.value.scope}`,
      );
    request.apiToken = token.value;
  };

/** The authenticated token of a scoped route (the hook guarantees it). */
export function tokenOf(request: FastifyRequest): ApiTokenRow {
  if (!request.apiToken) throw new ApiError("token_missing", "send an API token as Authorization: Bearer <token>");
  return request.apiToken;
}

/** The authenticated worker of the worker's route (the hook guarantees it). */
export function workerOf(request: FastifyRequest): WorkerRow {
  if (!request.worker)
    throw new ApiError("token_missing", "send the worker credential as Authorization: Bearer <credential>");
  return request.worker;
}
