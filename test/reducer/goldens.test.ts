import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadCatalog } from "../../src/contract/catalog.js";
import { decode, type PRPReplayFixture } from "../../src/contract/index.js";
import { protocolDir } from "../../src/contract/package-root.js";
import { paritySummary, prettyJson, reduceFixture, type SessionSnapshot } from "../../src/reducer/index.js";
import { acceptedReplayFixtures, goldenDir, snapshotGolden, summaryGolden } from "../../scripts/replay-goldens.js";

const root = protocolDir();
const accepted = acceptedReplayFixtures(root);
const read = (path: string) => readFileSync(path, "utf8").replace(/\r\n/g, "\n");
const fixture = (name: string): PRPReplayFixture => {
  const d = decode(readFileSync(join(root, "fixtures/replay", `${name}.json`)), { kind: "fixture" });
  assert.ok(d.ok, d.ok ? "" : d.error.message);
  return d.value;
};
const golden = (name: string): SessionSnapshot => JSON.parse(read(snapshotGolden(root, name)));

const V1_KEYS = [
  "schema",
  "fixtureName",
  "identity",
  "capabilities",
  "runPhase",
  "sessionState",
  "turnState",
  "activeTurnId",
  "items",
  "requests",
  "proposedResult",
  "terminal",
  "timeline",
  "sourceCursors",
  "processedEventIds",
  "duplicateEventIds",
  "outOfOrderEventIds",
  "gaps",
  "integrity",
];

describe("replay goldens", () => {
  it("cover exactly the accepted replay fixtures: every one has both files, no rejected fixture has any", () => {
    const expected = accepted.flatMap(({ name }) => [`${name}.snapshot.json`, `${name}.summary.json`]).sort();
    assert.deepEqual(readdirSync(goldenDir(root)).sort(), expected);
    const rejected = [...loadCatalog(root).entries].filter(
      ([path, e]) => path.startsWith("replay/") && e.expectation === "reject",
    );
    assert.ok(rejected.length > 0);
    for (const [path] of rejected)
      assert.equal(existsSync(snapshotGolden(root, path.slice("replay/".length, -".json".length))), false, path);
    for (const name of [
      "happy-path",
      "failed-run",
      "interrupted-run",
      "duplicate-event",
      "source-gap",
      "unknown-optional-fields",
      "budget-cost-stop-reason",
    ]) {
      assert.ok(
        accepted.some((f) => f.name === name),
        name,
      );
    }
  });

  for (const { name } of accepted) {
    it(`${name}: the reducer reproduces both goldens byte for byte`, () => {
      const snapshot = reduceFixture(fixture(name));
      assert.equal(prettyJson(snapshot), read(snapshotGolden(root, name)));
      assert.equal(prettyJson(paritySummary(snapshot)), read(summaryGolden(root, name)));
    });
  }

  it("happy-path: 9 timeline entries, integrity complete, run succeeded", () => {
    const s = golden("happy-path");
    assert.equal(s.timeline.length, 9);
    assert.equal(s.integrity, "complete");
    assert.equal(s.terminal?.runTerminalState, "succeeded");
    assert.equal(s.runPhase, "terminal");
    assert.equal(s.sessionState, "running", "no session.closed arrived, and the terminal is not read for it");
    assert.deepEqual(s.items, [
      {
        itemId: "item_replay_happy_01",
        kind: "assistant_message",
        status: "completed",
        text: "Added a usage section to the README. The test suite passes.",
      },
    ]);
    assert.deepEqual(s.timeline[0]!.summary, "Phase changed to workspace preparing");
  });

  it("source-gap: one gap missing [3], integrity gap_detected, cursor 6", () => {
    const s = golden("source-gap");
    assert.deepEqual(s.gaps, [{ sourceKey: "runner:runner_replay", expected: 3, received: 4, missing: [3] }]);
    assert.equal(s.integrity, "gap_detected");
    assert.deepEqual(s.sourceCursors, { "runner:runner_replay": 6 });
    assert.equal(s.identity?.runId, "run_replay_gap");
    assert.equal(s.proposedResult?.completionClaim.contractRevision, "replay-contract-v1");
  });

  it("duplicate-event: the projection is applied once and the id is listed", () => {
    const s = golden("duplicate-event");
    assert.deepEqual(s.duplicateEventIds, ["event_duplicate_03"]);
    assert.equal(s.timeline.filter((t) => t.sourceEventId === "event_duplicate_03").length, 1);
    assert.equal(s.integrity, "complete");
  });

  it("failed-run: 6 entries and a failed item with empty text", () => {
    const s = golden("failed-run");
    assert.equal(s.timeline.length, 6);
    assert.deepEqual(s.items, [{ itemId: "item_replay_failed_01", kind: "command", status: "failed", text: "" }]);
    assert.equal(s.turnState, "failed");
  });

  it("interrupted-run keeps the pending request", () => {
    const s = golden("interrupted-run");
    assert.deepEqual(s.requests, [
      {
        requestId: "request_replay_interrupted_01",
        requestKind: "runtime",
        type: "permission",
        status: "pending",
        prompt: "Allow the agent to delete the build/ directory?",
      },
    ]);
    assert.equal(s.turnState, "interrupted");
  });

  it("budget-cost-stop-reason: session and turn not_started, the stop reason in the terminal", () => {
    const s = golden("budget-cost-stop-reason");
    assert.equal(s.sessionState, "not_started");
    assert.equal(s.turnState, "not_started", "the terminal says cancelled, but no turn event arrived");
    assert.equal(s.terminal?.stopReason?.code, "budget_hard_stop");
  });

  it("unknown-optional-fields: unknowns kept where the object is copied, envelope-only extras gone", () => {
    const s = golden("unknown-optional-fields") as unknown as Record<string, Record<string, unknown>>;
    assert.equal(s.identity!.futureIdentityField, "identity-hint");
    assert.deepEqual(s.capabilities!.futureCapability, { enabled: true });
    assert.equal((s.capabilities!.driver as Record<string, unknown>).futureDriverField, "driver-hint");
    assert.equal(s.terminal!.futureTerminalReason, "clean_exit");
    const text = read(snapshotGolden(root, "unknown-optional-fields"));
    for (const extra of ["futureEnvelopeField", "futureFixtureHint", "futureCommandField", "futurePayloadField"])
      assert.ok(!text.includes(extra), extra);
    assert.deepEqual(s.proposedResult!.futureResultField, fixture("unknown-optional-fields").result.futureResultField);
    assert.notEqual(s.proposedResult!.futureResultField, undefined);
  });

  it("a v1 fixture's snapshot has exactly the v1 keys; beyond-v1 sections appear only when their events occurred", () => {
    assert.deepEqual(Object.keys(golden("happy-path")), V1_KEYS);
    assert.deepEqual(Object.keys(golden("session-goal-v2")), [...V1_KEYS, "sessionCapabilities", "sessionGoal"]);
    assert.deepEqual(golden("session-goal-v2").sessionGoal, { goal: null, lastEventType: "session.goal.cleared" });
    assert.deepEqual(golden("auth-credentials-updated").credentials, [
      {
        provider: "codex",
        bindingId: "harness-auth",
        revision: 1,
        detection: "credential_store",
        sourceEventId: "event_auth_03",
      },
    ]);
    assert.deepEqual(golden("runtime-activity-recorded").runtimeActivity, [
      { sourceEventId: "event_activity_03", namespace: "paperclip.review", activityKey: "diff.opened" },
    ]);
  });
});
