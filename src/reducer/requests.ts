import { isRecord, nonEmpty, text, type Json } from "./payload.js";
import type { SessionRequest } from "./snapshot.js";

/** The request a runtime_request.* payload carries: `payload.request`, or the payload itself. */
const requestOf = (payload: Json): Json => (isRecord(payload.request) ? payload.request : payload);

/** The id a runtime_request.* payload names. */
export const requestIdOf = (payload: Json): string => text(payload.requestId, text(requestOf(payload).requestId));

/**
 * The snapshot projection of a created request (wire.md §15.2: its `schema` and the rest are
 * dropped), or null when it names no id. An issue-thread interaction has a `kind` instead of a
 * `type`.
 */
export function sessionRequest(payload: Json): SessionRequest | null {
  const request = requestOf(payload);
  const requestId = text(request.requestId);
  if (requestId.length === 0) return null;
  return {
    requestId,
    requestKind: nonEmpty(request.requestKind, "runtime"),
    type: nonEmpty(request.type, nonEmpty(request.kind, "runtime")),
    status: nonEmpty(request.status, "pending"),
    prompt: text(request.prompt),
  };
}
