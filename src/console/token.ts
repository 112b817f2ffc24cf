import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** A fresh access token: 32 random bytes, hex (like Jupyter's). */
export const newAccessToken = (): string => randomBytes(32).toString("hex");

const digest = (text: string): Buffer => createHash("sha256").update(text).digest();

/**
 * Whether a request presents the token in `Authorization: Bearer TOKEN`, the one place it may be.
 * Never a cookie: a browser sends a host's cookies to every port of that host, so any other
 * server on 127.0.0.1 would get it. Never the query: URLs end up in logs and history.
 * Both sides are hashed first, so that neither the compare nor its length check leaks the token.
 */
export function presentsToken(authorization: string | undefined, token: string): "ok" | "missing" | "wrong" {
  const m = /^Bearer ([^\s]+)$/.exec(authorization ?? "");
  if (!m) return "missing";
  return timingSafeEqual(digest(m[1]!), digest(token)) ? "ok" : "wrong";
}
