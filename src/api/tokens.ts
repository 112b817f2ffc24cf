import { randomBytes, timingSafeEqual } from "node:crypto";
import { sha256Digest } from "../contract/digest.js";
import { fail, ok, type Result } from "../authority/errors.js";
import type { ApiScope, ApiTokenRow, AuthorityStore } from "../authority/store.js";

/** Each scope includes the ones before it. */
export const API_SCOPES: readonly ApiScope[] = ["read", "operate", "admin"];

/**
 * `prp_<tokenId>_<secret>`: the id finds the row, the secret is compared by digest. The store
 * keeps only the digest, so its database alone authenticates nobody.
 */
const TOKEN = /^prp_(tok_[0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export interface NewApiToken {
  /** The bearer token, shown once. */
  token: string;
  row: ApiTokenRow;
}

export function newApiToken(
  scope: ApiScope,
  options: { label?: string; expiresAtUnixMs?: number | null; nowMs: number },
): NewApiToken {
  const tokenId = `tok_${randomBytes(8).toString("hex")}`;
  const token = `prp_${tokenId}_${randomBytes(32).toString("base64url")}`;
  return {
    token,
    row: {
      tokenId,
      digest: sha256Digest(token),
      scope,
      label: options.label ?? "",
      createdAtUnixMs: options.nowMs,
      expiresAtUnixMs: options.expiresAtUnixMs ?? null,
      revokedAtUnixMs: null,
    },
  };
}

/**
 * Whether `presented`'s digest is `stored`, compared in constant time; always compared (against
 * the digest of "" when nothing is stored), so that an unknown id takes as long as a wrong secret.
 */
export function digestMatches(presented: string, stored: string | undefined): boolean {
  const a = Buffer.from(sha256Digest(presented));
  const b = Buffer.from(stored ?? sha256Digest(""));
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The bearer value of an `Authorization` header, or null. */
export const bearerOf = (authorization: string | undefined): string | null =>
  /^Bearer ([^\s]+)$/.exec(authorization ?? "")?.[1] ?? null;

/** Whether a token of scope `held` may do what needs `needed`. */
export const scopeCovers = (held: ApiScope, needed: ApiScope): boolean =>
  API_SCOPES.indexOf(held) >= API_SCOPES.indexOf(needed);

/**
 * The token an `Authorization: Bearer …` header presents, checked: well-formed, known, its
 * digest equal in constant time, not revoked, not expired. Every failure is `token_invalid`
 * with the same message, so that a caller learns nothing about which tokens exist.
 */
export async function authenticate(
  store: Pick<AuthorityStore, "apiToken">,
  authorization: string | undefined,
  nowMs: number,
): Promise<Result<ApiTokenRow>> {
  if (authorization === undefined || authorization === "")
    return fail("token_missing", "", "send an API token as Authorization: Bearer <token> (prp authority token create)");
  const bearer = bearerOf(authorization);
  const parts = bearer === null ? null : TOKEN.exec(bearer);
  const row = parts ? await store.apiToken(parts[1]!) : undefined;
  const equal = digestMatches(bearer ?? "", row?.digest);
  if (!row || !equal || row.revokedAtUnixMs !== null || (row.expiresAtUnixMs !== null && row.expiresAtUnixMs <= nowMs))
    return fail("token_invalid", "", "the API token is unknown, revoked or expired");
  return ok(row);
}
