import type { FastifyRequest } from "fastify";
import type { ApiScope, ApiTokenRow } from "../authority/store.js";
import type { Authenticate } from "./context.js";
import { ApiError, refusal } from "./errors.js";
import { scopeCovers } from "./tokens.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** What the route needs of the caller's token; undefined: the route is public. */
    scope?: ApiScope;
  }
  interface FastifyRequest {
    /** The caller's token, once authenticated. */
    apiToken: ApiTokenRow | null;
  }
}

/**
 * The onRequest check of every route that declares a scope: a valid bearer token (401
 * otherwise) whose scope covers the route's (403). It runs before the body is read, so an
 * unauthenticated caller costs no parsing.
 */
export const requireToken =
  (authenticate: Authenticate, now: () => number) =>
  async (request: FastifyRequest): Promise<void> => {
    const scope = request.routeOptions.config.scope;
    if (scope === undefined) return;
    const token = await authenticate(request.headers.authorization, now());
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
