import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openAuthorityStore, parseStoreLocation } from "../../src/authority/open-store.js";
import { readServerKeyFile } from "../../src/authority/server-key-source.js";
import { sha256Digest } from "../../src/contract/digest.js";
import { authorityFolder } from "./authority-processes.js";
import { runPrp } from "./run-cli.js";
import { rmSync, readFileSync } from "node:fs";

const { dir, key, store } = authorityFolder("prp-cli-workers-");
after(() => rmSync(dir, { recursive: true, force: true }));

const prp = (args: string[]) => runPrp(["authority", ...args, ...store]);

describe("prp authority worker and cap", () => {
  it("adds a worker whose credential is shown once and stored as a digest only", async () => {
    const out = join(dir, "build-01.credential");
    const added = prp(["worker", "add", "build-01", "--out", out]);
    assert.equal(added.status, 0, added.stderr);
    assert.equal(statSync(out).mode & 0o777, 0o600);
    const credential = readFileSync(out, "utf8").trim();
    assert.match(credential, /^prp_wkr_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    assert.ok(!added.stdout.includes(credential), "written to the file, not printed");
    const again = prp(["worker", "add", "build-01"]);
    assert.equal(again.status, 1, "a name is one worker's");
    assert.match(again.stderr, /worker_exists/);
    const opened = await openAuthorityStore(parseStoreLocation(store[1]!), { serverKey: readServerKeyFile(key) });
    try {
      const [row] = await opened.workers();
      assert.equal(row?.digest, sha256Digest(credential));
      assert.equal(row?.name, "build-01");
    } finally {
      await opened.close();
    }
    const listed = prp(["worker", "list", "--json"]);
    assert.equal(listed.status, 0, listed.stderr);
    const line = JSON.parse(listed.stdout.trim()) as Record<string, unknown>;
    assert.equal(line.name, "build-01");
    assert.equal(line.health, "never_seen");
    assert.ok(!listed.stdout.includes(credential));
  });

  it("revokes a worker by name", () => {
    assert.equal(prp(["worker", "add", "build-02"]).status, 0);
    const revoked = prp(["worker", "revoke", "build-02"]);
    assert.equal(revoked.status, 0, revoked.stderr);
    assert.match(revoked.stdout, /revoked wkr_[0-9a-f]{16} \(build-02\)/);
    const unknown = prp(["worker", "revoke", "nobody"]);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /unknown_worker/);
  });

  it("sets, lists and clears admission caps, and refuses a scope that is not one", () => {
    assert.equal(prp(["cap", "set", "*", "8"]).status, 0);
    assert.equal(prp(["cap", "set", "agent=claude", "4"]).status, 0);
    const listed = prp(["cap", "list", "--json"]);
    assert.deepEqual(
      listed.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
      [
        { scope: "*", max: 8, active: 0 },
        { scope: "agent=claude", max: 4, active: 0 },
      ],
    );
    assert.equal(prp(["cap", "clear", "agent=claude"]).status, 0);
    assert.doesNotMatch(prp(["cap", "list"]).stdout, /agent=claude/);
    for (const bad of [
      ["cap", "set", "Agent", "4"],
      ["cap", "set", "agent=claude", "-1"],
      ["cap", "set", "agent=claude", "many"],
      ["worker", "add", "Has Spaces"],
    ]) {
      const r = prp(bad);
      assert.equal(r.status, 2, `${bad.join(" ")}: ${r.stderr}`);
    }
  });

  it("queues a run created in the store, and refuses commands once it is cancelled while queued", async () => {
    const created = prp(["run", "create", "--script", "happy-path", "--json"]);
    assert.equal(created.status, 0, created.stderr);
    const { runId } = JSON.parse(created.stdout) as { runId: string };
    // The workers added above never polled: none is live.
    assert.match(prp(["runs"]).stdout, new RegExp(`${runId}  queued \\(no live worker\\)`));
    const opened = await openAuthorityStore(parseStoreLocation(store[1]!), { serverKey: readServerKeyFile(key) });
    try {
      assert.equal((await opened.cancelQueued(runId, Date.now())).ok, true);
    } finally {
      await opened.close();
    }
    assert.match(prp(["runs"]).stdout, new RegExp(`${runId}  ended: cancelled`));
    const refused = prp(["command", runId, "turn.start", "--payload", '{"text":"more","turnId":"turn_more"}']);
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /run_ended/);
  });

  it("refuses serve's queue options without --api", () => {
    const r = runPrp(["authority", "serve", ...store, "--worker-grace-ms", "1000"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--worker-grace-ms goes with --api/);
  });
});
