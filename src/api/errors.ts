import type { FastifyReply } from "fastify";

/** The status each refusal code is sent with; a code not listed is a 400 (the request is at fault). */
const STATUS_BY_CODE: Record<string, number> = {
  token_missing: 401,
  token_invalid: 401,
  scope_insufficient: 403,
  unknown_run: 404,
  not_found: 404,
  unknown_request: 404,
  run_ended: 409,
  run_exists: 409,
  run_claimed: 409,
  worker_exists: 409,
  not_queued: 409,
  worker_revoked: 401,
  unknown_worker: 401,
  request_already_answered: 409,
  replay_read_only: 409,
  command_conflict: 422,
  body_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  agent_profile_unknown: 422,
  rate_limited: 429,
  store_unavailable: 503,
  store_full: 503,
  store_read_only: 503,
  agent_catalog_invalid: 500,
  internal_error: 500,
};

export const statusOf = (code: string): number => STATUS_BY_CODE[code] ?? 400;

/**
 * A refusal thrown from a hook or handler: the error handler sends it as `{code, message, path?}`,
 * the one error body of the API, at the status its code implies.
 */
export class ApiError extends Error {
  readonly statusCode: number;
  constructor(
    readonly code: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
    this.statusCode = statusOf(code);
  }
}

/** A store refusal (`{code, path, message}`) as an ApiError. */
export const refusal = (error: { code: string; path?: string; message: string }): ApiError =>
  new ApiError(error.code, error.message, error.path === "" ? undefined : error.path);

export function sendError(reply: FastifyReply, error: { code: string; message: string; path?: string | undefined }) {
  const body: { code: string; message: string; path?: string } = { code: error.code, message: error.message };
  if (error.path !== undefined && error.path !== "") body.path = error.path;
  return reply.code(statusOf(error.code)).header("content-type", "application/json; charset=utf-8").send(body);
}
