import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { assertCompleted, completeRun, SecureAuthority } from "../security/support.js";
import { within } from "../support/within.js";
import { serverKey } from "./support.js";

/** A store each of whose answers takes `ms`, as a database across a network does. */
function slow(store: AuthorityStore, ms: number): AuthorityStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== "function" || key === "subscribe") return value;
      return async (...args: unknown[]) => {
        await new Promise((r) => setTimeout(r, ms));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe("the authority over a store that answers slowly", () => {
  const root = mkdtempSync(join(tmpdir(), "prp-networked-store-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  it("hears the runner's hello that arrives while the run is still being read (it was lost: auth_timeout)", async () => {
    const store = SqliteAuthorityStore.open(join(root, "store"), { serverKey });
    const authority = await SecureAuthority.start({ store: slow(store, 30) });
    try {
      const identity = await authority.newRun();
      const done = await within(
        completeRun(authority, identity, await authority.ticket(identity.runId, 60_000)),
        60_000,
        "the run",
      );
      await assertCompleted(authority, identity, done);
      assert.deepEqual(await authority.server.authFailures(identity.runId), {});
    } finally {
      await authority.close();
      await store.close();
    }
  });
});
