import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** The cookie that carries the access token after the first visit with `?token=`. */
export const TOKEN_COOKIE = "prp_console_token";

/** A fresh access token: 32 random bytes, hex (like Jupyter's). */
export const newAccessToken = (): string => randomBytes(32).toString("hex");

const digest = (text: string): Buffer => createHash("sha256").update(text).digest();

/**
 * The token a request presents (query `token`, else the cookie), compared in constant time.
 * Both sides are hashed first, so that neither the compare nor its length check leaks the token.
 */
export function presentsToken(request: IncomingMessage, url: URL, token: string): { ok: boolean; fromQuery: boolean } {
  const fromQuery = url.searchParams.get("token");
  const presented = fromQuery ?? cookie(request, TOKEN_COOKIE);
  if (presented === undefined) return { ok: false, fromQuery: false };
  return { ok: timingSafeEqual(digest(presented), digest(token)), fromQuery: fromQuery !== null };
}

/** The cookie set after a visit with the right `?token=`: not readable by scripts, never sent cross-site. */
export const tokenCookie = (token: string): string => `${TOKEN_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/`;

function cookie(request: IncomingMessage, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
