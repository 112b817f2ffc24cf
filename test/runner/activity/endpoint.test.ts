import assert from "node:assert/strict";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ActivityEndpoint, type RecordOutcome } from "../../../src/runner/activity/activity-endpoint.js";
import type { ActivityPayload } from "../../../src/runner/activity/activity-input.js";
import { CONTEXT_ENV, DESCRIPTOR_FILE, HELPER_ENV, harnessEnv, helperPath, publishedEnv } from "../../../src/runner/activity/notification-env.js";
import { helper } from "./support.js";

/** An endpoint whose recorder keeps what it was asked to record: the runner side, without a run. */
async function endpoint(dir: string, outcome: RecordOutcome = "recorded") {
  const recorded: ActivityPayload[] = [];
  const e = await ActivityEndpoint.open(dir, async (payload) => {
    recorded.push(payload);
    return outcome;
  });
  return { e, recorded, env: { [CONTEXT_ENV]: e.descriptorPath } };
}

const mode = (path: string) => lstatSync(path).mode & 0o777;

describe("runtime activity endpoint and helper (runtime.md §13.2)", () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "prp-activity-"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const privateDir = () => {
    const dir = join(root, `state-${++n}`);
    mkdirSync(dir, { mode: 0o700 });
    return dir;
  };

  it("publishes the absolute helper and the descriptor path; configured values for them are ignored, others kept", () => {
    const published = publishedEnv("/state");
    assert.equal(published[HELPER_ENV], helperPath());
    assert.ok(helperPath().startsWith("/") && helperPath().endsWith("/bin/prp-runnerd.js"));
    assert.equal(published[CONTEXT_ENV], join("/state", DESCRIPTOR_FILE));
    const env = harnessEnv({ [HELPER_ENV]: "/tmp/evil", [CONTEXT_ENV]: "/tmp/evil.json", HOME: "/home/x" }, published);
    assert.deepEqual(env, { HOME: "/home/x", ...published });
  });

  it("serves a 0600 socket named by a 0600 descriptor; exit 0 only after the recorder committed, once per call", async () => {
    const { e, recorded, env } = await endpoint(privateDir());
    try {
      assert.equal(mode(e.descriptorPath), 0o600, "descriptor 0600");
      assert.ok(lstatSync(e.socketPath).isSocket(), "a Unix socket");
      assert.equal(mode(e.socketPath), 0o600, "socket 0600");
      assert.equal(JSON.parse(readFileSync(e.descriptorPath, "utf8")).socket, e.socketPath);
      const context = await helper(env, ["notification-context"]);
      assert.equal(context.status, 0, context.stderr);
      assert.equal(context.stdout, `${e.context}\n`, "one line, the context");
      const edge = "😀".repeat(160); // 160 code points, 320 UTF-16 units
      const ran = await helper(env, ["record-activity", e.context, "paperclip.test", edge]);
      assert.equal(ran.status, 0, ran.stderr);
      assert.deepEqual(recorded, [{ namespace: "paperclip.test", activityKey: edge }]);
    } finally {
      e.close();
    }
  });

  it("invalid arguments exit 2 with the reason, and reach no runner", async () => {
    const { e, recorded, env } = await endpoint(privateDir());
    try {
      const cases: Array<[string[], RegExp]> = [
        [[e.context, "", "key"], /NAMESPACE: .*fewer than 1/],
        [[e.context, "ns", "😀".repeat(161)], /ACTIVITY_KEY: .*more than 160/],
        [[e.context, "ns\u0007", "key"], /NAMESPACE: .*pattern/],
        [[e.context, "ns", "key\u007f"], /ACTIVITY_KEY: .*pattern/],
        [["", "ns", "key"], /CONTEXT is empty/],
        [[e.context, "ns"], /missing required argument/],
      ];
      const runs = await Promise.all(cases.map(([args]) => helper(env, ["record-activity", ...args])));
      runs.forEach((ran, i) => {
        assert.equal(ran.status, 2, `case ${i}: ${ran.stderr}`);
        assert.match(ran.stderr, cases[i]![1], `case ${i}`);
      });
      assert.deepEqual(recorded, [], "nothing recorded");
    } finally {
      e.close();
    }
  });

  it("a recovered runner's endpoint rotates the context: the old one exits 3 and records nothing; a new one records", async () => {
    const dir = privateDir();
    const first = await endpoint(dir);
    const old = first.e.context;
    first.e.close(); // the process is gone
    const second = await endpoint(dir);
    try {
      assert.equal(second.e.descriptorPath, first.e.descriptorPath, "the descriptor path is stable");
      assert.notEqual(second.e.context, old, "a new context");
      const stale = await helper(second.env, ["record-activity", old, "ns", "stale"]);
      assert.equal(stale.status, 3, stale.stderr);
      assert.match(stale.stderr, /context_invalidated/);
      assert.deepEqual(second.recorded, []);
      const fresh = await helper(second.env, ["record-activity", second.e.context, "ns", "fresh"]);
      assert.equal(fresh.status, 0, fresh.stderr);
      assert.deepEqual(second.recorded, [{ namespace: "ns", activityKey: "fresh" }]);
    } finally {
      second.e.close();
    }
  });

  it("a run that has ended refuses with 3; no runner, no descriptor or a descriptor open to others: 4", async () => {
    const ended = await endpoint(privateDir(), "run_ended");
    const refused = await helper(ended.env, ["record-activity", ended.e.context, "ns", "late"]);
    ended.e.close();
    assert.equal(refused.status, 3, refused.stderr);
    assert.match(refused.stderr, /run_ended/);
    const gone = await helper(ended.env, ["record-activity", ended.e.context, "ns", "gone"]);
    assert.equal(gone.status, 4, gone.stderr);
    assert.match(gone.stderr, /runner_unavailable: the connection failed \(ENOENT\)/);
    const unset = await helper({}, ["notification-context"]);
    assert.equal(unset.status, 4);
    assert.match(unset.stderr, new RegExp(`${CONTEXT_ENV} is not set`));
    const open = await endpoint(privateDir());
    try {
      chmodSync(open.e.descriptorPath, 0o644);
      const ran = await helper(open.env, ["notification-context"]);
      assert.equal(ran.status, 4);
      assert.match(ran.stderr, /not a private \(0600\) regular file/);
    } finally {
      open.e.close();
    }
  });

  it("a state path too long for a Unix socket gets its socket in a private temporary folder, still 0600", async () => {
    const dir = join(privateDir(), "d".repeat(100));
    mkdirSync(dir, { mode: 0o700 });
    const { e, recorded, env } = await endpoint(dir);
    try {
      assert.ok(!e.socketPath.startsWith(dir), e.socketPath);
      assert.equal(mode(e.socketPath), 0o600);
      assert.equal(mode(join(e.socketPath, "..")), 0o700);
      const ran = await helper(env, ["record-activity", e.context, "ns", "long"]);
      assert.equal(ran.status, 0, ran.stderr);
      assert.equal(recorded.length, 1);
    } finally {
      e.close();
    }
    assert.throws(() => lstatSync(join(e.socketPath, "..")), /ENOENT/, "its folder is removed on close");
  });
});
