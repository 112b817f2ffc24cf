import { fail, ok, type Result } from "../errors.js";
import { apiTokenFrom, type Row } from "../store-rows.js";
import type { ApiTokenRow, ApiTokensPart } from "../store.js";
import type { SqliteHandle } from "./handle.js";

/** The HTTP API's bearer tokens: digests only, found by their public id, revoked rather than deleted. */
export class SqliteApiTokens implements ApiTokensPart {
  constructor(private readonly h: SqliteHandle) {}

  insertApiToken(t: ApiTokenRow): Promise<Result<void>> {
    return this.h.write((): Result<void> => {
      if (this.h.sql("SELECT 1 FROM api_tokens WHERE token_id = ?").get(t.tokenId))
        return fail("token_exists", "/tokenId", `token ${t.tokenId} is already stored`);
      this.h
        .sql(
          "INSERT INTO api_tokens (token_id, digest, scope, label, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .run(t.tokenId, t.digest, t.scope, t.label, t.createdAtUnixMs, t.expiresAtUnixMs, t.revokedAtUnixMs);
      return ok(undefined);
    });
  }

  apiToken(tokenId: string): Promise<ApiTokenRow | undefined> {
    return this.h.read(() => {
      const r = this.h.sql("SELECT * FROM api_tokens WHERE token_id = ?").get(tokenId) as Row | undefined;
      return r ? apiTokenFrom(r) : undefined;
    });
  }

  apiTokens(): Promise<ApiTokenRow[]> {
    return this.h.read(() =>
      (this.h.sql("SELECT * FROM api_tokens ORDER BY created_at, token_id").all() as Row[]).map(apiTokenFrom),
    );
  }

  revokeApiToken(tokenId: string, nowMs: number): Promise<Result<ApiTokenRow>> {
    return this.h.write((): Result<ApiTokenRow> => {
      this.h.sql("UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE token_id = ?").run(nowMs, tokenId);
      const r = this.h.sql("SELECT * FROM api_tokens WHERE token_id = ?").get(tokenId) as Row | undefined;
      return r ? ok(apiTokenFrom(r)) : fail("unknown_token", "/tokenId", `no API token ${tokenId} in this store`);
    });
  }
}
