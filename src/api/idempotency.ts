import type { IncomingHttpHeaders } from "node:http";
import { ApiError } from "./errors.js";

const KEY = /^[\x21-\x7e]{1,255}$/;

/** The request's Idempotency-Key: printable ASCII, 1–255 characters; undefined when not sent. */
export function idempotencyKey(headers: IncomingHttpHeaders): string | undefined {
  const value = headers["idempotency-key"];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !KEY.test(value))
    throw new ApiError(
      "invalid_request",
      "Idempotency-Key must be 1–255 printable ASCII characters, sent once",
      "/headers/idempotency-key",
    );
  return value;
}
