import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { after, before, describe, it } from "node:test";
import { openAuthorityStore, parseStoreLocation } from "../../src/authority/open-store.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { AuthorityServer } from "../../src/authority/server.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { authorityHealth } from "../../src/ops/authority-health.js";
import { startHealthServer, type HealthServerHandle } from "../../src/ops/health-server.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const get = async (url: string, init: RequestInit = {}) => {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text() };
};

/** A fresh SQLite store in its own folder. */
async function openStore(dir: string): Promise<AuthorityStore> {
  return openAuthorityStore(parseStoreLocation(`sqlite:${join(dir, "store")}`), {
    serverKey: ServerKey.fromHex("7a".repeat(32)) as ServerKey,
    create: true,
  });
}

describe("/readyz: the store reachable and migrated, the runner listener up", () => {
  let dir: string;
  let store: AuthorityStore;
  let authority: AuthorityServer;
  let health: HealthServerHandle;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-readyz-"));
    store = await openStore(dir);
    const ops = authorityHealth(store, () => authority);
    authority = AuthorityServer.open({
      store,
      runnerVersion: "0.1.0",
      runnerDigest: `sha256:${"ab".repeat(32)}`,
      observer: ops.metrics.observer,
    });
    await authority.listen(0, "127.0.0.1");
    health = await startHealthServer({ host: "127.0.0.1", port: 0 }, ops.source, (m) => assert.fail(m));
  });
  after(async () => {
    await health.close();
    await authority.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("only GET of its three paths: other paths and methods are 404", async () => {
    assert.equal((await get(`${health.url}/v1/runs`)).status, 404);
    assert.equal((await get(`${health.url}/metrics`, { method: "POST" })).status, 404);
    assert.equal((await get(`${health.url}/readyz?x=1`)).status, 200);
  });

  it("is 200 when ready, and 503 naming the store once the store is closed; /healthz stays 200", async () => {
    assert.deepEqual(await get(`${health.url}/readyz`), { status: 200, text: '{"status":"ready"}' });
    await store.close();
    {
      const down = await get(`${health.url}/readyz`);
      assert.equal(down.status, 503, down.text);
      const body = JSON.parse(down.text) as { status: string; failing: Array<{ check: string; message: string }> };
      assert.equal(body.status, "not_ready");
      assert.deepEqual(
        body.failing.map((f) => f.check),
        ["store"],
      );
      assert.ok(body.failing[0]!.message.length > 0);
      // Alive all the same: a liveness probe must not restart a process whose database is down.
      assert.equal((await get(`${health.url}/healthz`)).status, 200);
      // The scrape still answers: the store's gauges keep their last values.
      const metrics = await get(`${health.url}/metrics`);
      assert.equal(metrics.status, 200);
    }
  });
});

describe("/readyz on a closed authority", () => {
  it("is 503 naming the runner listener once the server closed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-readyz-"));
    const store = await openStore(dir);
    let authority: AuthorityServer | undefined;
    const ops = authorityHealth(store, () => authority);
    const health = await startHealthServer({ host: "127.0.0.1", port: 0 }, ops.source, () => {});
    try {
      const before = JSON.parse((await get(`${health.url}/readyz`)).text) as { failing: Array<{ check: string }> };
      assert.deepEqual(
        before.failing.map((f) => f.check),
        ["runner_listener"],
        "not ready before the server listens",
      );
      authority = AuthorityServer.open({ store, runnerVersion: "0.1.0", runnerDigest: `sha256:${"ab".repeat(32)}` });
      await authority.listen(0, "127.0.0.1");
      assert.equal((await get(`${health.url}/readyz`)).status, 200);
      await authority.close();
      const closed = await get(`${health.url}/readyz`);
      assert.equal(closed.status, 503);
      assert.match(closed.text, /runner_listener/);
    } finally {
      await health.close();
      await authority?.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("--health-addr off loopback", () => {
  it("is warned of, naming the exposure; on loopback there is no warning", async () => {
    const ops = { registry: new Registry(), readiness: [] };
    const warnings: string[] = [];
    // A documentation address (TEST-NET-1) no interface has: warned of, then the bind fails, so
    // the test never listens off loopback.
    await assert.rejects(startHealthServer({ host: "192.0.2.1", port: 0 }, ops, (m) => warnings.push(m)));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /192\.0\.2\.1 is not loopback: anyone who reaches it can read \/metrics/);
    const quiet = await startHealthServer({ host: "127.0.0.1", port: 0 }, ops, (m) => warnings.push(m));
    try {
      assert.equal(warnings.length, 1);
      assert.equal((await get(`${quiet.url}/healthz`)).status, 200);
    } finally {
      await quiet.close();
    }
  });
});
