import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { commandVersionRefusal, eventEnvelopeVersion } from "../../src/contract/version-gates.js";
import { RunMachine, type RunEffect } from "../../src/runner/run-machine.js";
import { command, throughSessionOpen } from "./machine-steps.js";

const ALL_ACTIONS = { availability: "available", actions: ["get", "set", "pause", "resume", "clear"] } as const;
type Emit = Extract<RunEffect, { kind: "emit" }>;

const emits = (effects: RunEffect[]) => effects.filter((e): e is Emit => e.kind === "emit");
const goalOps = (effects: RunEffect[]) => effects.flatMap((e) => (e.kind === "goal" ? [e.operation] : []));

/** A machine at `protocolVersion`, through prepare and an open session; `log` is every effect so far. */
function opened(protocolVersion: number, sessionGoals?: typeof ALL_ACTIONS) {
  const m = new RunMachine({
    runId: "run_1",
    sessionId: "session_1",
    harnessCommand: "fake",
    protocolVersion,
    ...(sessionGoals ? { sessionGoals: { ...sessionGoals, actions: [...sessionGoals.actions] } } : {}),
  });
  return { m, log: throughSessionOpen(m) };
}

describe("version gates (wire.md D2, O1)", () => {
  it("a command newer than the negotiated version, or of a type it lacks, is refused by name", () => {
    assert.equal(
      commandVersionRefusal({ schema: "paperclip.prp.command.v2", type: "turn.start" }, 1)?.code,
      "envelope_version_too_new",
    );
    assert.equal(
      commandVersionRefusal({ schema: "paperclip.prp.command.v1", type: "session.goal.get" }, 1)?.code,
      "command_needs_newer_version",
    );
    assert.equal(
      commandVersionRefusal({ schema: "paperclip.prp.command.v2", type: "external_provider.operation" }, 2)?.code,
      "command_needs_newer_version",
    );
    assert.equal(
      commandVersionRefusal({ schema: "paperclip.prp.command.v2", type: "session.goal.set" }, 3),
      null,
      "an older envelope is fine on a newer connection",
    );
  });

  it("events go as v1 envelopes unless their type needs more; a goal event has no v1 form at all", () => {
    assert.equal(eventEnvelopeVersion("turn.started", 3), 1);
    assert.equal(eventEnvelopeVersion("session.goal.updated", 2), 2);
    assert.equal(eventEnvelopeVersion("session.goal.updated", 3), 3);
    assert.equal(eventEnvelopeVersion("session.capabilities.updated", 1), null);
  });
});

describe("session goals in the run machine (runtime.md §9)", () => {
  it("v3, a harness with goals: the capability after the open, then the harness is asked for its snapshot", () => {
    const { log } = opened(3, ALL_ACTIONS);
    const caps = emits(log).find((e) => e.eventType === "session.capabilities.updated")!;
    assert.deepEqual(caps.payload, { sessionGoals: ALL_ACTIONS });
    assert.equal(caps.schemaVersion, 3, "under the negotiated version");
    assert.deepEqual(goalOps(log), [{ action: "get" }]);
    assert.equal(
      emits(log).find((e) => e.eventType === "turn.started")?.schemaVersion,
      undefined,
      "a v1 type stays v1",
    );
  });

  it("maps each goal command to one harness operation and each answer to its event", () => {
    const { m } = opened(2, ALL_ACTIONS);
    const set = command("session.goal.set", { requestId: "r1", objective: "Ship it", tokenBudget: 100 }, 2);
    assert.equal(m.refusal(set), null);
    assert.deepEqual(
      goalOps(m.apply(set)),
      [{ action: "set", objective: "Ship it", tokenBudget: 100 }],
      "requestId stays with the command",
    );
    const goal = { objective: "Ship it", status: "active", workingNow: false, tokenBudget: 100 } as const;
    assert.deepEqual(
      emits(m.onFact({ kind: "goal", change: "updated", goal })).map((e) => [e.eventType, e.payload, e.schemaVersion]),
      [["session.goal.updated", { goal }, 2]],
    );
    assert.deepEqual(
      emits(m.onFact({ kind: "goal", change: "snapshot", goal: null })).map((e) => [e.eventType, e.payload]),
      [["session.goal.snapshot", { goal: null }]],
    );
    assert.deepEqual(
      emits(m.onFact({ kind: "goal", change: "cleared", goal: null })).map((e) => [e.eventType, e.payload]),
      [["session.goal.cleared", {}]],
    );
  });

  it("a status-only set needs pause or resume advertised; a harness without goals gets no control", () => {
    const pauseOnly = { availability: "available", actions: ["get", "pause"] } as unknown as typeof ALL_ACTIONS;
    const { m } = opened(3, pauseOnly);
    assert.equal(m.refusal(command("session.goal.set", { status: "paused" }, 3)), null);
    assert.equal(m.refusal(command("session.goal.set", { status: "active" }, 3))?.code, "goal_action_unsupported");
    assert.equal(m.refusal(command("session.goal.clear", {}, 3))?.code, "goal_action_unsupported");
    const bare = opened(3);
    assert.deepEqual(
      emits(bare.log)
        .filter((e) => e.eventType.startsWith("session.goal") || e.eventType === "session.capabilities.updated")
        .map((e) => [e.eventType, e.payload]),
      [
        ["session.capabilities.updated", { sessionGoals: { availability: "unsupported", actions: [] } }],
        ["session.goal.snapshot", { goal: null }],
      ],
      "missing capability reads as unsupported, and there is no goal",
    );
    assert.equal(bare.m.refusal(command("session.goal.get", {}, 3))?.code, "goal_action_unsupported");
  });

  it("before the session is open a goal command is refused", () => {
    const m = new RunMachine({
      runId: "run_1",
      sessionId: "session_1",
      harnessCommand: "fake",
      protocolVersion: 3,
      sessionGoals: { ...ALL_ACTIONS, actions: [...ALL_ACTIONS.actions] },
    });
    m.apply(command("run.prepare"));
    assert.equal(m.refusal(command("session.goal.get", {}, 3))?.code, "session_not_open");
  });

  it("v1: no capability, no snapshot, no goal event even if the harness reports one, and every goal command refused", () => {
    const { m, log } = opened(1, ALL_ACTIONS);
    assert.deepEqual(
      emits(log).filter(
        (e) => e.eventType.startsWith("session.goal") || e.eventType === "session.capabilities.updated",
      ),
      [],
    );
    assert.deepEqual(goalOps(log), [], "the harness is not even asked");
    assert.deepEqual(
      emits(
        m.onFact({
          kind: "goal",
          change: "updated",
          goal: { objective: "x", status: "active", workingNow: true, tokenBudget: null },
        }),
      ),
      [],
    );
    assert.deepEqual(
      emits(m.onFact({ kind: "event", eventType: "session.goal.updated", payload: { goal: null } })),
      [],
      "not even as a harness event",
    );
    assert.equal(m.refusal(command("session.goal.get", {}, 2))?.code, "envelope_version_too_new");
    assert.equal(m.refusal(command("session.goal.get", {}, 1))?.code, "command_needs_newer_version");
  });

  it("the version a connection negotiates applies from then on (a durable runner's next connection)", () => {
    const { m } = opened(1, ALL_ACTIONS);
    m.setProtocolVersion(3);
    assert.equal(m.refusal(command("session.goal.get", {}, 3)), null);
    assert.equal(emits(m.onFact({ kind: "goal", change: "snapshot", goal: null }))[0]?.schemaVersion, 3);
  });
});
