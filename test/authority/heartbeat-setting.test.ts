import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { heartbeatIntervalSetting } from "../../src/authority/heartbeat-setting.js";
import { AuthorityServer } from "../../src/authority/server.js";
import { ServerKey } from "../../src/authority/server-key.js";

describe("the authority's heartbeat interval setting", () => {
  it("defaults to 30 s and takes a whole number of ms from 100 to 60,000", () => {
    assert.deepEqual(heartbeatIntervalSetting(undefined), { ok: true, value: 30_000 });
    for (const ms of [100, 250, 60_000]) assert.deepEqual(heartbeatIntervalSetting(ms), { ok: true, value: ms });
  });

  it("refuses a value out of bounds or not whole, naming the field and the bounds", () => {
    for (const ms of [0, 99, 60_001, 1.5, Number.NaN, -250]) {
      const refused = heartbeatIntervalSetting(ms);
      assert.ok(!refused.ok, String(ms));
      assert.equal(refused.error.code, "heartbeat_out_of_range");
      assert.equal(refused.error.path, "/heartbeatIntervalMs");
      assert.match(refused.error.message, /from 100 to 60000/);
    }
  });

  it("AuthorityServer.open refuses it before it opens a store", () => {
    const root = mkdtempSync(join(tmpdir(), "prp-heartbeat-setting-"));
    try {
      assert.throws(
        () =>
          AuthorityServer.open({
            stateDir: join(root, "authority"),
            serverKey: ServerKey.generate(),
            runnerVersion: "v",
            runnerDigest: `sha256:${"0".repeat(64)}`,
            heartbeatIntervalMs: 50,
          }),
        /^Error: heartbeat_out_of_range: the heartbeat interval must be .* got 50$/,
      );
      assert.deepEqual(readdirSync(root), [], "no store was created");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
