import { PrpApiError } from "../client/index.js";

/**
 * What a failed poll means: `retry` (network, 5xx, 429, a garbled answer: the same requestId
 * again after a backoff), `revoked` (401/403: the worker credential is revoked or wrong; no poll
 * can succeed) or `refused` (another 4xx: this worker's request is wrong; resending cannot cure it).
 */
export type PollFailure = "retry" | "revoked" | "refused";

export function pollFailure(err: unknown): PollFailure {
  if (!(err instanceof PrpApiError)) return "retry";
  if (err.status === 0 || err.status === 429 || err.status >= 500 || err.status < 400) return "retry";
  if (err.status === 401 || err.status === 403) return "revoked";
  return "refused";
}

/** One line about the failure, for a person. */
export const describeFailure = (err: unknown): string =>
  err instanceof PrpApiError
    ? `${err.status === 0 ? "" : `${err.status} `}${err.code}: ${err.message}`
    : err instanceof Error
      ? err.message
      : String(err);
