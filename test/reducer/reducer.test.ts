import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { canonicalJson, decode, type PrpEvent } from "../../src/contract/index.js";
import { protocolDir } from "../../src/contract/package-root.js";
import {
  applyEvent,
  applyEvents,
  createSnapshot,
  MAX_LISTED_MISSING_SEQS,
  reduceEvents,
  reduceFixture,
  paritySummary,
} from "../../src/reducer/index.js";
import { result, terminal } from "../contract/samples.js";
import { envelope, type Body } from "./arbitraries.js";

/** Events 1..n of one source, from bodies. */
const stream = (...bodies: Body[]): PrpEvent[] =>
  bodies.map((b, i) => envelope("runner_t", i + 1, `event_${i + 1}`, b));
const reduce = (...bodies: Body[]) => reduceEvents(null, null, stream(...bodies));
const of = (eventType: string, payload: Record<string, unknown> = {}, extra: Partial<Body> = {}): Body => ({
  eventType,
  payload,
  ...extra,
});

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

describe("session reducer: projection", () => {
  it("starts queued with nothing started, and null identity for a bare stream", () => {
    const s = reduceEvents(null, null, []);
    assert.equal(s.schema, "paperclip.prp.session-snapshot.v1");
    assert.deepEqual(
      [s.fixtureName, s.identity, s.capabilities, s.runPhase, s.sessionState, s.turnState, s.activeTurnId],
      [null, null, null, "queued", "not_started", "not_started", null],
    );
    assert.equal(paritySummary(s).runId, null);
  });

  it("item deltas append, a non-empty completed text replaces them, an empty one does not", () => {
    const s = reduce(
      of("item.started", { kind: "assistant_message", text: "" }, { itemId: "a" }),
      of("item.delta", { text: "Hel" }, { itemId: "a" }),
      of("item.delta", { text: "lo" }, { itemId: "a" }),
      of("item.started", {}, { itemId: "b" }),
      of("item.delta", { text: "draft" }, { itemId: "b" }),
      of("item.completed", { kind: "command", text: "" }, { itemId: "b" }),
    );
    assert.deepEqual(s.items, [
      { itemId: "a", kind: "assistant_message", status: "running", text: "Hello" },
      { itemId: "b", kind: "command", status: "completed", text: "draft" },
    ]);
    const done = applyEvent(
      s,
      envelope("runner_t", 7, "event_7", of("item.completed", { text: "Hello, world" }, { itemId: "a" })),
    );
    assert.deepEqual(done.items[0], {
      itemId: "a",
      kind: "assistant_message",
      status: "completed",
      text: "Hello, world",
    });
    assert.equal(s.items[0]!.text, "Hello", "the earlier snapshot is untouched");
  });

  it("an item event without an itemId is on the timeline but projects no item; kind defaults to diagnostic", () => {
    const s = reduce(of("item.started", { kind: "command" }), of("item.failed", { message: "boom" }, { itemId: "x" }));
    assert.deepEqual(s.items, [{ itemId: "x", kind: "diagnostic", status: "failed", text: "" }]);
    assert.deepEqual(
      s.timeline.map((t) => t.summary),
      ["Started command", "boom"],
    );
    assert.equal("itemId" in s.timeline[0]!, false);
    assert.equal(s.timeline[1]!.itemId, "x");
  });

  it("session and turn events set their states; a turn end clears the active turn", () => {
    let s = reduce(of("session.started"), of("turn.started", {}, { turnId: "turn_1" }));
    assert.deepEqual([s.sessionState, s.turnState, s.activeTurnId], ["running", "running", "turn_1"]);
    for (const [type, state] of [
      ["turn.completed", "completed"],
      ["turn.failed", "failed"],
      ["turn.interrupted", "interrupted"],
      ["turn.cancelled", "cancelled"],
    ] as const) {
      const ended = applyEvent(s, envelope("runner_t", 3, `end_${state}`, of(type)));
      assert.deepEqual([ended.turnState, ended.activeTurnId], [state, null]);
    }
    s = applyEvent(s, envelope("runner_t", 3, "event_3", of("session.closed")));
    assert.equal(s.sessionState, "closed");
    assert.equal(applyEvent(s, envelope("runner_t", 4, "event_4", of("session.failed"))).sessionState, "failed");
    assert.equal(applyEvent(s, envelope("runner_t", 4, "event_4", of("session.resumed"))).sessionState, "running");
  });

  it("infers nothing from the terminal: states stay as session and turn events left them", () => {
    const s = reduce(
      of("session.started"),
      of("turn.started", {}, { turnId: "t" }),
      of("run.result.proposed", result()),
      of("run.terminal", terminal({ futureField: 1 })),
    );
    assert.deepEqual(
      [s.runPhase, s.sessionState, s.turnState, s.activeTurnId],
      ["terminal", "running", "running", "t"],
    );
    assert.deepEqual(s.terminal, terminal({ futureField: 1 }));
    assert.deepEqual(s.proposedResult, result());
    assert.deepEqual(s.timeline.map((t) => t.summary).slice(2), ["Did the work.", "Run succeeded"]);
    const bare = reduce(
      of("run.terminal", terminal({ turnTerminalState: "cancelled", runTerminalState: "cancelled" })),
    );
    assert.deepEqual([bare.sessionState, bare.turnState], ["not_started", "not_started"]);
    assert.deepEqual(paritySummary(bare), {
      runId: null,
      integrity: "complete",
      timelineCount: 1,
      duplicateEventIds: [],
      gaps: [],
      turnTerminalState: "cancelled",
      runTerminalState: "cancelled",
    });
  });

  it("runtime.phase.changed sets the phase; summaries turn underscores into spaces", () => {
    const s = reduce(of("runtime.phase.changed", { phase: "harness_starting" }));
    assert.equal(s.runPhase, "harness_starting");
    assert.equal(s.timeline[0]!.summary, "Phase changed to harness starting");
  });

  it("a request is added once; resolved, expired and cancelled set its status", () => {
    const request = {
      schema: "paperclip.runtime_request.v1",
      requestKind: "runtime",
      requestId: "r1",
      type: "permission",
      status: "pending",
      prompt: "Allow?",
    };
    const s = reduce(
      of("runtime_request.created", { request }),
      of("runtime_request.created", { request: { ...request, prompt: "Changed?" } }),
      of("runtime_request.expired", { requestId: "r1" }),
      of("runtime_request.resolved", { requestId: "nope" }),
    );
    assert.deepEqual(s.requests, [
      { requestId: "r1", requestKind: "runtime", type: "permission", status: "expired", prompt: "Allow?" },
    ]);
    assert.deepEqual(
      s.timeline.map((t) => t.summary),
      ["permission: Allow?", "permission: Changed?", "Expired permission: Allow?", "Resolved runtime request nope"],
    );
  });

  it("diagnostics read as their message, else as a sentence-cased code, else as their type", () => {
    const s = reduce(
      of("runner.diagnostic", { code: "backpressure", message: "outbox is full" }),
      of("harness.diagnostic", { code: "codex_unrelated_information" }),
      of("runner.diagnostic"),
    );
    assert.deepEqual(
      s.timeline.map((t) => t.summary),
      ["outbox is full", "Codex unrelated information", "runner diagnostic"],
    );
  });
});

describe("session reducer: sequencing and integrity", () => {
  it("records a gap once with every missing seq, and keys cursors by source", () => {
    const events = [
      envelope("a", 1, "a1", of("turn.started")),
      envelope("a", 5, "a5", of("turn.started")),
      envelope("b", 2, "b2", of("turn.started")),
    ];
    const s = reduceEvents(null, null, events);
    assert.deepEqual(s.gaps, [
      { sourceKey: "runner:a", expected: 2, received: 5, missing: [2, 3, 4] },
      { sourceKey: "runner:b", expected: 1, received: 2, missing: [1] },
    ]);
    assert.deepEqual(s.sourceCursors, { "runner:a": 5, "runner:b": 2 });
    assert.equal(s.integrity, "gap_detected");
  });

  it("lists at most MAX_LISTED_MISSING_SEQS of a huge gap; expected and received still bound it exactly", () => {
    const s = reduceEvents(null, null, [envelope("a", Number.MAX_SAFE_INTEGER, "far", of("turn.started"))]);
    const [gap] = s.gaps;
    assert.equal(gap!.missing.length, MAX_LISTED_MISSING_SEQS);
    assert.deepEqual(
      [gap!.expected, gap!.received, gap!.missing[0], gap!.missing.at(-1)],
      [1, Number.MAX_SAFE_INTEGER, 1, MAX_LISTED_MISSING_SEQS],
    );
  });

  it("records an out-of-order id once, applies none of it, and counts duplicates across the batch, sorted", () => {
    const first = stream(of("session.started"), of("turn.started"));
    const late = envelope("runner_t", 1, "late", of("session.failed"));
    const s = reduceEvents(null, null, [...first, first[1]!, late, late, first[0]!]);
    assert.deepEqual(s.outOfOrderEventIds, ["late"]);
    assert.deepEqual(s.duplicateEventIds, ["event_1", "event_2", "late"]);
    assert.deepEqual(s.processedEventIds, ["event_1", "event_2"]);
    assert.equal(s.sessionState, "running");
    assert.equal(s.timeline.length, 2);
    assert.equal(s.integrity, "gap_detected");
  });
});

describe("session reducer: sections beyond v1", () => {
  const measurement = (n: number, cost: number | null = 0.5) => ({
    inputTokens: n,
    outputTokens: n,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    activeSeconds: 1,
    requests: 1,
    providerCostUsd: cost,
  });

  it("usage: sums run deltas where available, keeps the latest session cumulative, and leaves unknowns unknown", () => {
    const s = reduce(
      of("usage.reported", {
        provider: "codex",
        model: "m",
        cumulative: measurement(100),
        runDelta: measurement(10),
        runDeltaAvailable: true,
      }),
      of("usage.reported", {
        provider: "codex",
        model: null,
        cumulative: measurement(150),
        runDelta: null,
        runDeltaAvailable: false,
      }),
      of("usage.reported", {
        provider: "codex",
        model: "m",
        cumulative: measurement(170),
        runDelta: measurement(20, null),
        runDeltaAvailable: true,
      }),
    );
    assert.deepEqual(s.usage, {
      reports: 3,
      runTotal: {
        inputTokens: 30,
        outputTokens: 30,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        activeSeconds: 2,
        requests: 2,
        providerCostUsd: null,
      },
      sessionCumulative: { provider: "codex", model: "m", ...measurement(170) },
    });
    assert.equal(
      reduce(of("usage.reported", { cumulative: measurement(5), runDeltaAvailable: false })).usage?.runTotal,
      null,
      "session usage is never relabelled as run usage",
    );
  });

  it("plans: the latest snapshot per planId replaces the earlier one, in first-seen order", () => {
    const plan = (planId: string, revision: number) => ({
      schema: "paperclip.plan.updated.v1",
      planId,
      revision,
      steps: [],
      complete: false,
      syncStatus: "not_applicable",
    });
    const s = reduce(
      of("plan.updated", plan("p1", 1)),
      of("plan.updated", plan("p2", 1)),
      of("plan.updated", plan("p1", 2)),
      of("plan.updated", { steps: [] }),
    );
    assert.deepEqual(s.plans, [plan("p1", 2), plan("p2", 1)]);
  });

  it("tool executions: later events update fields, earlier ones (such as name) stay", () => {
    const base = {
      schema: "paperclip.tool.execution.v1",
      executionId: "x1",
      transport: "process",
      operation: "execute",
      outputBytes: 0,
      outputTruncated: false,
      outputDigest: null,
    };
    const s = reduce(
      of("tool.execution.started", { ...base, name: "npm test", status: "running", output: null }),
      of("tool.execution.completed", { ...base, status: "completed", output: "ok", exitCode: 0 }),
    );
    assert.deepEqual(s.toolExecutions, [{ ...base, name: "npm test", status: "completed", output: "ok", exitCode: 0 }]);
  });

  it("credentials: the highest revision per provider and binding; a lower one arriving later is stale", () => {
    const creds = (provider: string, revision: number) => ({
      schema: "paperclip.auth.credentials.updated.v1",
      provider,
      bindingId: "harness-auth",
      revision,
      detection: "credential_store",
    });
    const s = reduce(
      of("auth.credentials.updated", creds("codex", 2)),
      of("auth.credentials.updated", creds("grok", 1)),
      of("auth.credentials.updated", creds("codex", 1)),
      of("auth.credentials.updated", creds("codex", 3)),
    );
    assert.deepEqual(s.credentials, [
      {
        provider: "codex",
        bindingId: "harness-auth",
        revision: 3,
        detection: "credential_store",
        sourceEventId: "event_4",
      },
      {
        provider: "grok",
        bindingId: "harness-auth",
        revision: 1,
        detection: "credential_store",
        sourceEventId: "event_2",
      },
    ]);
  });

  it("session capabilities and goal: the latest of each; cleared leaves no goal", () => {
    const goal = { objective: "Ship it.", status: "active", workingNow: true, tokenBudget: null };
    let s = reduce(
      of("session.capabilities.updated", { sessionGoals: { availability: "available", actions: ["get"] } }),
      of("session.goal.snapshot", { goal }),
    );
    assert.deepEqual(s.sessionCapabilities, { sessionGoals: { availability: "available", actions: ["get"] } });
    assert.deepEqual(s.sessionGoal, { goal, lastEventType: "session.goal.snapshot" });
    s = applyEvent(s, envelope("runner_t", 3, "event_3", of("session.goal.cleared")));
    assert.deepEqual(s.sessionGoal, { goal: null, lastEventType: "session.goal.cleared" });
  });

  it("runtime activity: every record, in order; a v1-only stream has none of these sections", () => {
    const s = reduce(
      of("runtime.activity.recorded", { namespace: "ns", activityKey: "a" }),
      of("runtime.activity.recorded", { namespace: "ns", activityKey: "a" }),
    );
    assert.deepEqual(s.runtimeActivity, [
      { sourceEventId: "event_1", namespace: "ns", activityKey: "a" },
      { sourceEventId: "event_2", namespace: "ns", activityKey: "a" },
    ]);
    const v1 = reduce(of("session.started"), of("item.delta", { text: "x" }, { itemId: "i" }));
    for (const key of [
      "sessionCapabilities",
      "sessionGoal",
      "usage",
      "plans",
      "toolExecutions",
      "credentials",
      "runtimeActivity",
    ])
      assert.equal(key in v1, false, key);
  });
});

describe("session reducer: purity", () => {
  const fixtureBytes = readFileSync(join(protocolDir(), "fixtures/replay/interrupted-run.json"));

  it("never mutates its inputs: deep-frozen fixtures, snapshots and events reduce the same", () => {
    const decoded = decode(fixtureBytes, { kind: "fixture" });
    assert.ok(decoded.ok);
    const frozen = deepFreeze(structuredClone(decoded.value));
    const before = canonicalJson(frozen);
    const snapshot = reduceFixture(frozen);
    assert.deepEqual(snapshot, reduceFixture(decoded.value));
    assert.equal(canonicalJson(frozen), before);

    const start = deepFreeze(createSnapshot({ fixtureName: "f", identity: frozen.identity, capabilities: null }));
    const events = deepFreeze(
      stream(
        of("turn.started"),
        of("run.result.proposed", result()),
        of("run.terminal", terminal()),
        of("usage.reported", { cumulative: {} }),
      ),
    );
    const next = applyEvents(start, events);
    assert.equal(next.timeline.length, 4);
    assert.equal(start.timeline.length, 0);
    assert.equal(
      applyEvent(
        deepFreeze(next),
        deepFreeze(envelope("runner_t", 9, "event_9", of("item.delta", { text: "x" }, { itemId: "i" }))),
      ).items.length,
      1,
    );
  });

  it("shares no object with its inputs, so changing the snapshot cannot change them", () => {
    const events = stream(of("run.result.proposed", result()), of("run.terminal", terminal()));
    const identity = {
      schema: "paperclip.prp.identity.v1",
      companyId: "c",
      issueId: "i",
      runId: "r",
      environmentLeaseId: "l",
      runnerInstanceId: "ri",
      normalizedSessionId: "s",
      driverSessionId: "d",
    } as const;
    const s = reduceEvents({ ...identity }, null, events);
    assert.notEqual(s.proposedResult, events[0]!.payload);
    assert.notEqual(s.terminal, events[1]!.payload);
    const next = applyEvent(s, envelope("runner_t", 3, "event_3", of("turn.started")));
    assert.notEqual(next.timeline, s.timeline);
    assert.notEqual(next.identity, s.identity);
    assert.equal(s.timeline.length, 2);
  });
});
