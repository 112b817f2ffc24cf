/**
 * Every failure the client reports: a refusal by the API (its `{code, message, path?}` and the
 * HTTP status), an answer that is not what the API promises, or an event stream that broke its
 * promise (a repeated or missing sequence number).
 */
export class PrpApiError extends Error {
  override readonly name = "PrpApiError";
  /** The HTTP status; 0 when there was no answer (the connection failed). */
  readonly status: number;
  /** The API's code (run_ended, token_invalid, …) or the client's own (stream_duplicate, …). */
  readonly code: string;
  /** A JSON pointer into the request, when the API refused one part of it. */
  readonly path: string | undefined;

  constructor(status: number, code: string, message: string, path?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
    this.code = code;
    this.path = path;
  }
}

/** The client's own codes, beside the API's. */
export const CLIENT_ERROR_CODES = {
  /** fetch threw: no answer at all. */
  network: "network_error",
  /** A body that is not the JSON the API promises. */
  badResponse: "invalid_response",
  /** The event stream sent a seq it had already sent, or one lower. */
  duplicate: "stream_duplicate",
  /** The event stream skipped a seq. */
  gap: "stream_gap",
  /** The event stream sent an event without a numeric id or with data that is not JSON. */
  badEvent: "stream_invalid_event",
  /** Too many reconnections failed in a row. */
  unavailable: "stream_unavailable",
} as const;

/** The error an HTTP answer that is not a success stands for. */
export async function errorFromResponse(response: Response): Promise<PrpApiError> {
  const text = await response.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown; path?: unknown };
    if (typeof body.code === "string" && typeof body.message === "string") {
      return new PrpApiError(
        response.status,
        body.code,
        body.message,
        typeof body.path === "string" ? body.path : undefined,
      );
    }
  } catch {
    // Not JSON: reported below with the status alone.
  }
  const status = `${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
  return new PrpApiError(response.status, `http_${response.status}`, `the API answered ${status}`);
}
