import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { AuthorityServer } from "../../src/authority/server.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { BUILD, realRunner } from "../security/support.js";
import { identity } from "./support.js";

/** The store with every `run` read taking real time, as a networked store's does. */
function slowRuns(store: AuthorityStore, delayMs: number): AuthorityStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== "function") return value;
      if (name !== "run") return value.bind(target);
      return async (...args: unknown[]) => {
        await sleep(delayMs);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe("an authority on a store that answers over the network", () => {
  it("a runner's hello that arrives while the authority still reads the run is not lost: the handshake completes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-slow-store-"));
    const key = ServerKey.generate();
    const store = SqliteAuthorityStore.open(dir, { serverKey: key });
    const server = AuthorityServer.open({ store: slowRuns(store, 100), runnerVersion: BUILD.version, runnerDigest: BUILD.digest });
    try {
      await server.listen(0);
      const id = identity(1);
      assert.ok((await server.registerRun(id)).ok);
      const ticket = await server.issueBootstrapTicket(id.runId, 60_000);
      assert.ok(ticket.ok);
      const runner = await realRunner(server.connectUrl(id.runId), id, { kind: "bootstrap", token: ticket.value.token });
      assert.ok(runner.ok, runner.ok ? "" : `${runner.error.code}: ${runner.error.message}`);
      runner.value.close();
    } finally {
      await server.close();
      await store.close();
      key.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
