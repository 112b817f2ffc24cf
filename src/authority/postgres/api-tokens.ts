import { fail, ok, type Result } from "../errors.js";
import { apiTokenFrom } from "../store-rows.js";
import type { ApiTokenRow, ApiTokensPart } from "../store.js";
import type { PostgresHandle } from "./handle.js";

/** The HTTP API's bearer tokens: digests only, found by their public id, revoked rather than deleted. */
export class PostgresApiTokens implements ApiTokensPart {
  constructor(private readonly h: PostgresHandle) {}

  async insertApiToken(t: ApiTokenRow): Promise<Result<void>> {
    const inserted = await this.h.query(
      `INSERT INTO api_tokens (token_id, digest, scope, label, created_at, expires_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (token_id) DO NOTHING RETURNING token_id`,
      [t.tokenId, t.digest, t.scope, t.label, t.createdAtUnixMs, t.expiresAtUnixMs, t.revokedAtUnixMs],
    );
    return inserted.length === 1
      ? ok(undefined)
      : fail("token_exists", "/tokenId", `token ${t.tokenId} is already stored`);
  }

  async apiToken(tokenId: string): Promise<ApiTokenRow | undefined> {
    const [r] = await this.h.query("SELECT * FROM api_tokens WHERE token_id = $1", [tokenId]);
    return r ? apiTokenFrom(r) : undefined;
  }

  async apiTokens(): Promise<ApiTokenRow[]> {
    return (await this.h.query('SELECT * FROM api_tokens ORDER BY created_at, token_id COLLATE "C"')).map(apiTokenFrom);
  }

  async revokeApiToken(tokenId: string, nowMs: number): Promise<Result<ApiTokenRow>> {
    const [r] = await this.h.query(
      "UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE token_id = $2 RETURNING *",
      [nowMs, tokenId],
    );
    return r ? ok(apiTokenFrom(r)) : fail("unknown_token", "/tokenId", `no API token ${tokenId} in this store`);
  }
}
