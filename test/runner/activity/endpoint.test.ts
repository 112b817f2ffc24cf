import assert from "node:assert/strict";
import { chmodSync, lstatSync, readFileSync, readdirSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { ActivityEndpoint, type RecordOutcome } from "../../../src/runner/activity/activity-endpoint.js";
import type { ActivityPayload } from "../../../src/runner/activity/activity-input.js";
import { HarnessActivity } from "../../../src/runner/activity/harness-activity.js";
import {
  CONTEXT_ENV,
  DESCRIPTOR_FILE,
  HELPER_ENV,
  SECRET_ENV,
  harnessEnv,
  helperPath,
} from "../../../src/harness/notification-env.js";
import { helper } from "./support.js";

const activities: HarnessActivity[] = [];
/** A runner's activity folder with its first harness generation drawn. */
function harnessActivity(): HarnessActivity {
  const activity = HarnessActivity.create();
  activities.push(activity);
  activity.nextGeneration();
  return activity;
}

/** An endpoint whose recorder keeps what it was asked to record: the runner side, without a run; `env` is its current harness's. */
async function endpoint(outcome: RecordOutcome = "recorded", activity = harnessActivity()) {
  const recorded: ActivityPayload[] = [];
  const e = await ActivityEndpoint.open(activity, async (payload) => {
    recorded.push(payload);
    return outcome;
  });
  return { e, recorded, activity, env: { [CONTEXT_ENV]: e.descriptorPath, [SECRET_ENV]: activity.env[SECRET_ENV]! } };
}

const mode = (path: string) => lstatSync(path).mode & 0o777;

describe("runtime activity endpoint and helper (runtime.md §13.2)", () => {
  after(() => {
    for (const activity of activities) activity.remove();
  });

  it("publishes the absolute helper, the descriptor in the activity folder and the generation's secret; configured values for them are ignored, others kept", () => {
    const activity = harnessActivity();
    const published = activity.env;
    assert.equal(published[HELPER_ENV], helperPath());
    assert.ok(helperPath().startsWith("/") && helperPath().endsWith("/bin/prp-runnerd.js"));
    assert.equal(published[CONTEXT_ENV], join(activity.dir, DESCRIPTOR_FILE));
    assert.match(published[SECRET_ENV]!, /^[A-Za-z0-9_-]{43}$/, "256 random bits");
    const env = harnessEnv(
      { [HELPER_ENV]: "/tmp/evil", [CONTEXT_ENV]: "/tmp/evil.json", [SECRET_ENV]: "borrowed", HOME: "/home/x" },
      { ...published },
    );
    assert.deepEqual(env, { HOME: "/home/x", ...published });
    assert.deepEqual(
      harnessEnv({ [SECRET_ENV]: "borrowed" }, {}),
      {},
      "a configured secret is dropped even with nothing published",
    );
  });

  it("the activity folder is a private folder of its own under the system's temporary folder, removed with remove()", async () => {
    const { e, activity } = await endpoint();
    try {
      assert.equal(realpathSync(dirname(activity.dir)), realpathSync(tmpdir()));
      assert.equal(mode(activity.dir), 0o700, "folder 0700");
      assert.deepEqual([dirname(e.socketPath), dirname(e.descriptorPath)], [activity.dir, activity.dir]);
      assert.deepEqual(
        readdirSync(activity.dir).sort(),
        [DESCRIPTOR_FILE, "runtime-notification.sock"],
        "the socket and the descriptor, nothing else",
      );
    } finally {
      e.close();
    }
    activity.remove();
    assert.throws(() => lstatSync(activity.dir), /ENOENT/);
  });

  it("refuses, with generation_refused and exit 3, a request without the secret, with another runner's, or with the previous harness generation's; nothing is recorded", async () => {
    const { e, recorded, activity, env } = await endpoint();
    const other = harnessActivity();
    try {
      const previous = env[SECRET_ENV];
      activity.nextGeneration(); // the harness was restarted: env now holds the new generation's secret
      const cases: Array<[string, Record<string, string>]> = [
        ["no secret", { [CONTEXT_ENV]: e.descriptorPath }],
        ["another runner's secret", { [CONTEXT_ENV]: e.descriptorPath, [SECRET_ENV]: other.env[SECRET_ENV]! }],
        ["the previous generation's secret", { [CONTEXT_ENV]: e.descriptorPath, [SECRET_ENV]: previous }],
        [
          "the secret with one character changed",
          {
            [CONTEXT_ENV]: e.descriptorPath,
            [SECRET_ENV]: `${activity.env[SECRET_ENV]!.slice(0, -1)}${activity.env[SECRET_ENV]!.endsWith("A") ? "B" : "A"}`,
          },
        ],
      ];
      for (const [name, callerEnv] of cases) {
        for (const args of [["notification-context"], ["record-activity", e.context, "ns", name]]) {
          const ran = await helper(callerEnv, args);
          assert.equal(ran.status, 3, `${name}, ${args[0]}: ${ran.stderr}`);
          assert.match(
            ran.stderr,
            /generation_refused: this request does not carry the secret of the harness the runner is running now/,
            name,
          );
          assert.equal(ran.stdout, "", `${name}: no context handed out`);
        }
      }
      assert.deepEqual(recorded, [], "nothing recorded");
      const current = await helper({ [CONTEXT_ENV]: e.descriptorPath, [SECRET_ENV]: activity.env[SECRET_ENV]! }, [
        "record-activity",
        e.context,
        "ns",
        "current",
      ]);
      assert.equal(current.status, 0, current.stderr);
      assert.deepEqual(recorded, [{ namespace: "ns", activityKey: "current" }], "the current generation is served");
    } finally {
      e.close();
    }
  });

  it("serves a 0600 socket named by a 0600 descriptor; exit 0 only after the recorder committed, once per call", async () => {
    const { e, recorded, env } = await endpoint();
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
    const { e, recorded, env } = await endpoint();
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
    const first = await endpoint();
    const old = first.e.context;
    first.e.close(); // the process is gone
    const second = await endpoint("recorded", first.activity);
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
    const ended = await endpoint("run_ended");
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
    const open = await endpoint();
    try {
      chmodSync(open.e.descriptorPath, 0o644);
      const ran = await helper(open.env, ["notification-context"]);
      assert.equal(ran.status, 4);
      assert.match(ran.stderr, /not a private \(0600\) regular file/);
    } finally {
      open.e.close();
    }
  });
});
