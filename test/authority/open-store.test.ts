import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, it } from "node:test";
import { describeStore, openAuthorityStore, parseStoreLocation } from "../../src/authority/open-store.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { StateError } from "../../src/storage/private-sqlite.js";

describe("--store: where the authority keeps its state", () => {
  it("sqlite:DIR is the store's directory, made absolute", () => {
    assert.deepEqual(parseStoreLocation("sqlite:rel/dir"), { kind: "sqlite", directory: resolve("rel/dir") });
    assert.deepEqual(parseStoreLocation("sqlite:/var/lib/prp"), { kind: "sqlite", directory: "/var/lib/prp" });
  });

  it("a postgres URL keeps its password out of what is shown", () => {
    const location = parseStoreLocation("postgres://prp:s3cret@db.example:5432/prp");
    assert.equal(location.kind, "postgres");
    assert.equal(describeStore(location), "postgres://prp:***@db.example:5432/prp");
    assert.doesNotMatch(describeStore(location), /s3cret/);
    assert.equal(parseStoreLocation("postgresql://db/prp").kind, "postgres");
  });

  it("anything else is refused, with a typed reason", () => {
    for (const text of ["", "sqlite:", "mysql://db/prp", "/var/lib/prp", "postgres://[bad"]) {
      assert.throws(
        () => parseStoreLocation(text),
        (err: unknown) => err instanceof StateError && err.code === "store_location_invalid",
        text,
      );
    }
  });

  it("opens SQLite; an unreachable PostgreSQL is refused as store_unreachable, naming no password", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-open-store-"));
    const key = ServerKey.generate();
    try {
      const location = parseStoreLocation(`sqlite:${join(dir, "store")}`);
      await assert.rejects(
        openAuthorityStore(location, { serverKey: key }),
        /store_missing: sqlite:.*: no store here/,
        "only a command that makes a store makes one",
      );
      assert.equal(existsSync(join(dir, "store")), false, "a refused open leaves nothing behind");
      const store = await openAuthorityStore(location, { serverKey: key, create: true });
      assert.deepEqual(await store.runIds(), []);
      await store.close();
      const again = await openAuthorityStore(location, { serverKey: key });
      await again.close();
      await assert.rejects(
        openAuthorityStore(parseStoreLocation("postgres://prp:s3cret@127.0.0.1:1/prp"), { serverKey: key }),
        (err: unknown) => {
          assert.ok(err instanceof StateError);
          assert.equal(err.code, "store_unreachable");
          assert.match(
            err.message,
            /postgres:\/\/prp:\*\*\*@127\.0\.0\.1:1\/prp: the PostgreSQL store cannot be opened/,
          );
          assert.doesNotMatch(err.message, /s3cret/);
          return true;
        },
      );
    } finally {
      key.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
