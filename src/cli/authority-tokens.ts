import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import type { ApiScope, ApiTokenRow } from "../authority/store.js";
import { API_SCOPES, newApiToken } from "../api/tokens.js";
import { writePrivateFile } from "../storage/private-file.js";
import { refusal, runAction, withStore, withStoreOptions, type StoreOptions } from "./authority-options.js";
import { printableJson, visible } from "./terminal-text.js";

interface TokenCreateOptions extends StoreOptions {
  scope: ApiScope;
  expires?: number;
  label?: string;
  out?: string;
  json?: boolean;
}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--expires`: a lifetime (`30m`, `12h`, `90d`) or an ISO time; the expiry in Unix ms. */
export function parseExpiry(value: string, nowMs = Date.now()): number {
  const lifetime = /^(\d{1,6})([mhd])$/.exec(value);
  if (lifetime) return nowMs + Number(lifetime[1]) * UNITS[lifetime[2]!]!;
  const at = Date.parse(value);
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && Number.isFinite(at)) {
    if (at <= nowMs) throw new InvalidArgumentError(`${value} is already past`);
    return at;
  }
  throw new InvalidArgumentError(`expected a lifetime like 30m, 12h or 90d, or an ISO time, got "${value}"`);
}

function parseScope(value: string): ApiScope {
  if ((API_SCOPES as readonly string[]).includes(value)) return value as ApiScope;
  throw new InvalidArgumentError(`expected one of ${API_SCOPES.join(", ")}, got "${value}"`);
}

const when = (ms: number | null) => (ms === null ? "never" : new Date(ms).toISOString());

const describeToken = (t: ApiTokenRow) => ({
  tokenId: t.tokenId,
  scope: t.scope,
  label: t.label,
  createdAt: when(t.createdAtUnixMs),
  expiresAt: t.expiresAtUnixMs === null ? null : when(t.expiresAtUnixMs),
  revokedAt: t.revokedAtUnixMs === null ? null : when(t.revokedAtUnixMs),
});

/** `prp authority token create|list|revoke`: the HTTP API's bearer tokens, stored as digests. */
export function registerTokens(authority: Command): void {
  const token = authority
    .command("token")
    .description("the HTTP API's bearer tokens (prp authority serve --api): create, list, revoke");

  withStoreOptions(token.command("create").description("make a token; it is shown once and stored only as a digest"))
    .requiredOption(
      "--scope <scope>",
      "what it may do: read (GET), operate (also create runs and send commands), admin (also issue tickets)",
      parseScope,
    )
    .option("--expires <when>", "a lifetime (30m, 12h, 90d) or an ISO time; default: never", (v) => parseExpiry(v))
    .option("--label <text>", "what the token is for, shown by list")
    .option("--out <file>", "write the token to this file (mode 600) instead of printing it")
    .option("--json", "print one JSON line: {tokenId, scope, label, createdAt, expiresAt, token?}")
    .addHelpText(
      "after",
      `
The token goes in Authorization: Bearer <token>. Keep it like a password: the store holds only
its digest, so a lost token cannot be shown again (revoke it and make another).

Example:
  prp authority token create --scope operate --expires 90d --label ci --out ~/.config/prp/token`,
    )
    .action((opts: TokenCreateOptions) =>
      runAction(async () => {
        const made = newApiToken(opts.scope, {
          nowMs: Date.now(),
          expiresAtUnixMs: opts.expires ?? null,
          ...(opts.label !== undefined ? { label: opts.label } : {}),
        });
        await withStore(
          opts,
          async (store) => {
            const inserted = await store.insertApiToken(made.row);
            if (!inserted.ok) throw refusal(inserted.error);
          },
          { create: true },
        );
        if (opts.out !== undefined) writePrivateFile(opts.out, `${made.token}\n`);
        const shown = opts.out === undefined ? { token: made.token } : {};
        if (opts.json) console.log(printableJson(JSON.stringify({ ...describeToken(made.row), ...shown })));
        else {
          console.log(
            visible(`token ${made.row.tokenId} (${made.row.scope}), expires ${when(made.row.expiresAtUnixMs)}`),
          );
          console.log(opts.out === undefined ? made.token : `written to ${visible(opts.out)} (mode 600)`);
        }
      }),
    );

  withStoreOptions(token.command("list").description("the tokens: id, scope, label, created, expires, revoked"))
    .option("--json", "one JSON line per token")
    .action((opts: StoreOptions & { json?: boolean }) =>
      runAction(async () => {
        const tokens = await withStore(opts, (store) => store.apiTokens());
        for (const t of tokens.map(describeToken))
          console.log(
            opts.json
              ? printableJson(JSON.stringify(t))
              : visible(
                  `${t.tokenId}  ${t.scope.padEnd(7)}  created ${t.createdAt}  expires ${t.expiresAt ?? "never"}${t.revokedAt ? `  REVOKED ${t.revokedAt}` : ""}  ${t.label}`,
                ),
          );
      }),
    );

  withStoreOptions(
    token
      .command("revoke")
      .description("revoke a token: every request with it is refused from now on")
      .argument("<tokenId>", "the token's id (tok_…, from list)"),
  ).action((tokenId: string, opts: StoreOptions) =>
    runAction(async () => {
      const revoked = await withStore(opts, (store) => store.revokeApiToken(tokenId, Date.now()));
      if (!revoked.ok) throw refusal(revoked.error);
      console.log(visible(`revoked ${tokenId} at ${when(revoked.value.revokedAtUnixMs)}`));
    }),
  );
}
