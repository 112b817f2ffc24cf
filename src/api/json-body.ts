import type { FastifyInstance } from "fastify";
import { parseJson } from "../contract/json-input.js";
import { ApiError } from "./errors.js";

/**
 * The only body the API reads: JSON, parsed by the contract's own reader, which refuses what
 * JSON.parse lets through (a member name repeated, `__proto__`, nesting past the depth limit,
 * malformed UTF-8). Any other content type is a typed 415.
 */
export function jsonBodyOnly(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer", bodyLimit }, (_request, body, done) => {
    const parsed = parseJson(body as Buffer, bodyLimit);
    if (parsed.ok) return done(null, parsed.value);
    const code = parsed.error.code === "frame_too_large" ? "body_too_large" : "invalid_json";
    done(new ApiError(code, parsed.error.message, parsed.error.path === "" ? undefined : parsed.error.path), undefined);
  });
  // A body of any other type: refused before it is read.
  app.addContentTypeParser("*", (request, _payload, done) =>
    done(
      new ApiError(
        "unsupported_media_type",
        `send the body as application/json, not ${String(request.headers["content-type"])}`,
      ),
      undefined,
    ),
  );
}
