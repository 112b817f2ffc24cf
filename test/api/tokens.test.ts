import assert from "node:assert/strict";
import { readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openAuthorityStore } from "../../src/authority/open-store.js";
import { ServerKey } from "../../src/authority/server-key.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { authenticate, newApiToken, scopeCovers } from "../../src/api/tokens.js";
import { authorityFolder } from "../cli/authority-processes.js";
import { runPrp } from "../cli/run-cli.js";
import { codeOf, serverKey, tempRoot, unwrap } from "../authority/support.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";

describe("API tokens", () => {
  const tmp = tempRoot("prp-api-tokens-");
  after(tmp.cleanup);

  it("authenticates a stored token, and refuses a wrong secret, a malformed header, a revoked and an expired token alike", async () => {
    const store = SqliteAuthorityStore.open(tmp.dir(), { serverKey });
    const made = newApiToken("operate", { nowMs: 1000, expiresAtUnixMs: 5000, label: "ci" });
    unwrap(await store.insertApiToken(made.row));
    assert.equal(made.row.digest.startsWith("sha256:"), true);
    assert.ok(!made.row.digest.includes(made.token.slice(-20)), "the store holds a digest, not the token");

    assert.equal(unwrap(await authenticate(store, `Bearer ${made.token}`, 2000)).tokenId, made.row.tokenId);
    const wrongSecret = made.token.slice(0, -1) + (made.token.endsWith("A") ? "B" : "A");
    for (const header of [`Bearer ${wrongSecret}`, made.token, `Basic ${made.token}`, "Bearer prp_tok_x_y", "Bearer "])
      assert.equal(codeOf(await authenticate(store, header, 2000)), "token_invalid", header);
    assert.equal(codeOf(await authenticate(store, undefined, 2000)), "token_missing");
    assert.equal(codeOf(await authenticate(store, `Bearer ${made.token}`, 5000)), "token_invalid", "expired");
    unwrap(await store.revokeApiToken(made.row.tokenId, 3000));
    assert.equal(codeOf(await authenticate(store, `Bearer ${made.token}`, 3000)), "token_invalid", "revoked");
    await store.close();
  });

  it("scopes include the ones before them", () => {
    assert.equal(scopeCovers("admin", "operate"), true);
    assert.equal(scopeCovers("operate", "read"), true);
    assert.equal(scopeCovers("read", "operate"), false);
    assert.equal(scopeCovers("operate", "admin"), false);
  });

  it("prp authority token create, list and revoke: the token shown once or written 600, the store holding its digest", async () => {
    const folder = authorityFolder("prp-api-token-cli-");
    try {
      const out = join(folder.dir, "token");
      const created = runPrp([
        "authority",
        "token",
        "create",
        ...folder.store,
        "--scope",
        "admin",
        "--expires",
        "2d",
        "--label",
        "ops",
        "--out",
        out,
        "--json",
      ]);
      assert.equal(created.status, 0, created.stderr);
      const shown = JSON.parse(created.stdout) as Record<string, unknown>;
      assert.equal(shown.token, undefined, "with --out the token is not printed");
      assert.equal(statSync(out).mode & 0o777, 0o600);
      const token = readFileSync(out, "utf8").trim();
      assert.match(token, /^prp_tok_[0-9a-f]{16}_/);

      const printed = runPrp(["authority", "token", "create", ...folder.store, "--scope", "read"]);
      assert.equal(printed.status, 0, printed.stderr);
      assert.match(printed.stdout, /^token tok_[0-9a-f]{16} \(read\), expires never\nprp_tok_/);

      const listed = runPrp(["authority", "token", "list", ...folder.store, "--json"]);
      const rows = listed.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(
        rows.map((r) => [r.tokenId, r.scope, r.label]),
        [
          [shown.tokenId, "admin", "ops"],
          [rows[1]!.tokenId, "read", ""],
        ],
      );
      assert.ok(!listed.stdout.includes(token) && !listed.stdout.includes("prp_tok_"), "list never shows a token");

      const key = ServerKey.fromHex(readFileSync(folder.key, "utf8").trim())!;
      const store: AuthorityStore = await openAuthorityStore(
        { kind: "sqlite", directory: join(folder.dir, "store") },
        { serverKey: key },
      );
      try {
        assert.equal(unwrap(await authenticate(store, `Bearer ${token}`, Date.now())).scope, "admin");
        const revoked = runPrp(["authority", "token", "revoke", ...folder.store, String(shown.tokenId)]);
        assert.equal(revoked.status, 0, revoked.stderr);
        assert.equal(codeOf(await authenticate(store, `Bearer ${token}`, Date.now())), "token_invalid");
      } finally {
        await store.close();
        key.destroy();
      }

      const unknown = runPrp(["authority", "token", "revoke", ...folder.store, "tok_ffffffffffffffff"]);
      assert.equal(unknown.status, 1);
      assert.match(unknown.stderr, /unknown_token/);
      for (const bad of [
        ["--scope", "root"],
        ["--scope", "read", "--expires", "soon"],
        ["--scope", "read", "--expires", "2001-01-01"],
      ]) {
        const refused = runPrp(["authority", "token", "create", ...folder.store, ...bad]);
        assert.equal(refused.status, 2, `${bad.join(" ")}: ${refused.stderr}`);
      }
    } finally {
      rmSync(folder.dir, { recursive: true, force: true });
    }
  });
});
