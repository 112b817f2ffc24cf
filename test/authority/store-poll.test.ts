import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { openAuthorityStore, parseStoreLocation } from "../../src/authority/open-store.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { AuthorityServer } from "../../src/authority/server.js";
import { STORE_FILE } from "../../src/authority/limits.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { until } from "../support/until.js";

/**
 * The authority's store poll reads each live run only when another process committed: an idle
 * authority with thousands of runners must not read thousands of cursors every 200 ms. The
 * independent record is SQLite's own: a second connection, as an admin process is, commits.
 */
describe("store poll: reads only after another process committed", () => {
  let dir: string;
  let store: AuthorityStore;
  let authority: AuthorityServer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-store-poll-"));
    store = await openAuthorityStore(parseStoreLocation(`sqlite:${join(dir, "store")}`), {
      serverKey: ServerKey.fromHex("5c".repeat(32)) as ServerKey,
      create: true,
    });
    authority = AuthorityServer.open({ store, runnerVersion: "0.1.0", runnerDigest: `sha256:${"ab".repeat(32)}` });
  });
  after(async () => {
    await authority.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("syncs once, skips while nothing changed elsewhere, and syncs again after an outside commit", async () => {
    let syncs = 0;
    let marks = 0;
    authority.syncLiveRuns = () => {
      syncs += 1;
      return Promise.resolve();
    };
    const mark = store.externalChangeMark.bind(store);
    store.externalChangeMark = () => {
      marks += 1;
      return mark();
    };
    const failures: Error[] = [];
    const poller = authority.pollStore(5, (err) => failures.push(err));
    try {
      await until(
        () => marks >= 1 && syncs === 1,
        () => `the first poll (marks ${marks}, syncs ${syncs})`,
        10_000,
      );
      const before = marks;
      await until(
        () => marks >= before + 5,
        () => `five more polls (marks ${marks})`,
        10_000,
      );
      assert.equal(syncs, 1, "a poll with nothing changed elsewhere read the live runs");

      const outside = new Database(join(dir, "store", STORE_FILE));
      try {
        outside.pragma("user_version = 7"); // a commit by another connection, as `prp authority run cancel` makes
      } finally {
        outside.close();
      }
      await until(
        () => syncs === 2,
        () => `a sync after the outside commit (syncs ${syncs})`,
        10_000,
      );
      const settled = marks;
      await until(
        () => marks >= settled + 5,
        () => `five more polls (marks ${marks})`,
        10_000,
      );
      assert.equal(syncs, 2, "the same outside commit was read twice");
      assert.deepEqual(failures, []);
    } finally {
      await poller.stop();
    }
  });
});
