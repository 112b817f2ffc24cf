import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalJson } from "../../src/contract/canonical-json.js";
import type { HarnessGone } from "../../src/harness/harness-driver.js";
import { RunMachine, type RunEffect } from "../../src/runner/run-machine.js";
import { result } from "../contract/samples.js";
import { command, throughSessionOpen } from "./machine-steps.js";

const machine = () => new RunMachine({ runId: "run_1", sessionId: "session_1", harnessCommand: "fake" });
const emitted = (effects: RunEffect[]) => effects.flatMap((e) => (e.kind === "emit" ? [e.eventType] : []));
const kinds = (effects: RunEffect[]) => effects.map((e) => (e.kind === "emit" ? `emit:${e.eventType}` : e.kind));
const gone = (exitCode: number | null, signal: string | null = null): HarnessGone => ({
  exit: { exitCode, signal, success: exitCode === 0 },
  log: { lines: [], retainedBytes: 0, droppedLines: 0 },
});
const terminalOf = (effects: RunEffect[]) =>
  (effects.find((e) => e.kind === "emit" && e.eventType === "run.terminal") as Extract<RunEffect, { kind: "emit" }>)
    .payload as any;

/** Drives a machine through prepare, open and turn with a harness that answers at once. */
function started(m = machine()): { m: RunMachine; log: RunEffect[] } {
  const log = throughSessionOpen(m);
  log.push(...m.apply(command("turn.start", { turnId: "turn_1" })));
  return { m, log };
}

describe("the run machine, replayed from its inputs (no process, clock or socket)", () => {
  it("turns the happy path into the runner's events and the driver's calls, in order", () => {
    const { m, log } = started();
    assert.deepEqual(kinds(log), [
      "emit:runtime.phase.changed",
      "emit:workspace.ready",
      "emit:harness.starting",
      "start_harness",
      "arm_timer",
      "disarm_timer",
      "emit:harness.ready",
      "command_done",
      "emit:session.starting",
      "open_session",
      "arm_timer",
      "emit:session.started",
      "emit:runtime.phase.changed",
      "emit:session.capabilities.updated",
      "emit:session.goal.snapshot",
      "disarm_timer",
      "command_done",
      "emit:turn.submitted",
      "start_turn",
      "command_done",
    ]);
    const end = [...m.onFact({ kind: "result", payload: result() }), ...m.onGone(gone(0))];
    assert.deepEqual(emitted(end), ["run.result.proposed", "harness.exited", "run.terminal"]);
    assert.equal(terminalOf(end).runTerminalState, "succeeded");
    assert.ok(m.terminated);
    assert.deepEqual(
      m.onFact({ kind: "event", eventType: "item.started", payload: {} }),
      [],
      "nothing follows the terminal",
    );
  });

  describe("warm resume after a durable runner restart (recover)", () => {
    const turn = { turnId: "turn_1" };
    const emits = (effects: RunEffect[], type: string) =>
      effects
        .filter((e): e is Extract<RunEffect, { kind: "emit" }> => e.kind === "emit" && e.eventType === type)
        .map((e) => e.payload);
    const resumedSession = (m: RunMachine) => [
      ...m.onFact({ kind: "ready", pid: 43, resumePoint: {} }),
      ...m.onFact({ kind: "event", eventType: "session.resumed", payload: { driverSessionId: "acp_1" } }),
      ...m.onFact({ kind: "event", eventType: "runtime.phase.changed", payload: { phase: "executing" } }),
    ];

    it("an agent that cannot load sessions: the run fails closed at once, no harness started", () => {
      const m = machine();
      const out = m.recover({ driverSessionId: "acp_1", loadSession: false, turn });
      assert.equal(
        out.some((e) => e.kind === "start_harness"),
        false,
      );
      assert.equal(terminalOf(out).stopReason.code, "session_not_resumable");
      assert.ok(m.terminated);
    });

    it("a turn in flight: the new harness loads the session, then the turn is failed as indeterminate and never sent again", () => {
      const m = machine();
      assert.deepEqual(kinds(m.recover({ driverSessionId: "acp_1", loadSession: true, turn })), [
        "start_harness",
        "arm_timer",
      ]);
      const out = resumedSession(m);
      assert.deepEqual(
        out.filter((e) => e.kind === "open_session"),
        [{ kind: "open_session", resume: true, resumeSessionId: "acp_1" }],
      );
      assert.equal(
        out.some((e) => e.kind === "start_turn"),
        false,
        "the prompt is not sent again",
      );
      assert.deepEqual(
        emits(out, "turn.failed").map((p) => p.code),
        ["turn_indeterminate"],
      );
      assert.ok(kinds(out).includes("stop_harness"));
      const terminal = terminalOf(m.onGone(gone(null, "SIGTERM")));
      assert.deepEqual(
        [terminal.runTerminalState, terminal.reconciliation.reason, terminal.stopReason.code],
        ["failed", "harness_process_failed", "turn_indeterminate"],
      );
    });

    it("no turn yet: a turn.start that arrives while the session loads waits for it, then runs; a second turn is still refused", () => {
      const m = machine();
      m.recover({ driverSessionId: "acp_1", loadSession: true, turn: null });
      assert.equal(m.refusal(command("session.open"))?.code, "session_already_open");
      const early = m.apply(command("turn.start", { turnId: "turn_1", text: "go" }));
      assert.deepEqual(kinds(early), ["emit:turn.submitted", "command_done"], "held until the session is loaded");
      const out = resumedSession(m);
      assert.deepEqual(
        out.filter((e) => e.kind === "start_turn"),
        [{ kind: "start_turn", turnId: "turn_1", text: "go" }],
      );
      assert.equal(m.refusal(command("turn.start"))?.code, "turn_already_started");
      assert.equal(m.terminated, false);
    });

    it("the load fails or never answers: the run fails closed with session_resume_failed and the reason", () => {
      const failed = machine();
      failed.recover({ driverSessionId: "acp_1", loadSession: true, turn: null });
      failed.onFact({ kind: "ready", pid: 43, resumePoint: {} });
      const out = failed.onFact({
        kind: "event",
        eventType: "session.failed",
        payload: { code: "resource_not_found", message: "the agent does not know this resource" },
      });
      assert.match(
        String(emits(out, "runner.diagnostic")[0]?.message),
        /could not resume session acp_1: the agent does not know this resource/,
      );
      assert.equal(terminalOf(failed.onGone(gone(null, "SIGTERM"))).stopReason.code, "session_resume_failed");
      const silent = machine();
      silent.recover({ driverSessionId: "acp_1", loadSession: true, turn: null });
      silent.onFact({ kind: "ready", pid: 43, resumePoint: {} });
      assert.match(
        String(emits(silent.onTimer("session_started"), "runner.diagnostic")[0]?.message),
        /no answer to the session load/,
      );
    });
  });

  it("fails the run closed on an internal error, with a P0 diagnostic and stopReason runner_internal_error; the first cause stands", () => {
    const { m } = started();
    const out = m.onInternalError("TypeError: boom");
    assert.deepEqual(kinds(out), ["emit:runner.diagnostic", "stop_harness"]);
    assert.deepEqual((out[0] as Extract<RunEffect, { kind: "emit" }>).payload, {
      code: "runner_internal_error",
      message: "TypeError: boom",
    });
    assert.deepEqual(m.onInternalError("a second one"), [], "one cause, one diagnostic");
    const terminal = terminalOf(m.onGone(gone(null, "SIGTERM")));
    assert.equal(terminal.runTerminalState, "failed");
    assert.equal(terminal.stopReason.code, "runner_internal_error");
    assert.equal(terminal.stopReason.message, "TypeError: boom");
  });

  it("leaves out a harness terminal proposal canonical JSON cannot hold, so the one terminal can still be carried", () => {
    const { m } = started();
    m.onFact({ kind: "terminal_proposal", payload: { runTerminalState: "succeeded", note: "split \ud83d" } });
    m.onFact({ kind: "result", payload: result() });
    const end = m.onGone(gone(0));
    assert.deepEqual(emitted(end), ["harness.exited", "harness.diagnostic", "run.terminal"]);
    const terminal = terminalOf(end);
    assert.equal(terminal.harnessTerminalProposal, undefined);
    assert.equal(terminal.runTerminalState, "succeeded", "decided on the runner's facts");
    assert.doesNotThrow(() => canonicalJson(terminal));
  });

  it("is deterministic: the same inputs give the same effects", () => {
    assert.deepEqual(started().log, started().log);
  });

  it("does not believe a harness that reports a runner-owned event, and ends its group", () => {
    const { m } = started();
    const out = m.onFact({ kind: "event", eventType: "run.terminal", payload: {} });
    assert.deepEqual(kinds(out), ["emit:harness.diagnostic", "stop_harness"]);
    assert.deepEqual(
      m.onFact({ kind: "event", eventType: "item.started", payload: {} }),
      [],
      "an untrusted harness is not read any further",
    );
    assert.equal(terminalOf(m.onGone(gone(0))).reconciliation.reason, "harness_protocol_violation");
  });

  it("a violation the driver types carries its code into the terminal's stopReason; an untyped one adds none", () => {
    const typed = started().m;
    typed.onFact({ kind: "violation", message: "the agent asked under forbid", code: "request_forbidden" });
    const terminal = terminalOf(typed.onGone(gone(0)));
    assert.deepEqual(
      [terminal.reconciliation.reason, terminal.stopReason?.code, terminal.stopReason?.message],
      ["harness_protocol_violation", "request_forbidden", "the agent asked under forbid"],
    );
    const untyped = started().m;
    untyped.onFact({ kind: "violation", message: "broken" });
    assert.equal(terminalOf(untyped.onGone(gone(0))).stopReason, undefined);
  });

  it("a request the harness cancelled is no longer pending: a late request.resolve is refused", () => {
    const { m } = started();
    const request = {
      schema: "paperclip.runtime_request.v1",
      requestKind: "runtime",
      requestId: "request_1",
      type: "permission",
      status: "pending",
      prompt: "Allow?",
    };
    m.onFact({ kind: "event", eventType: "runtime_request.created", payload: { request } });
    const resolve = command("request.resolve", { requestId: "request_1", resolution: { action: "accept" } });
    assert.equal(m.refusal(resolve), null);
    m.onFact({
      kind: "event",
      eventType: "runtime_request.cancelled",
      payload: { requestId: "request_1", reason: "cancelled" },
    });
    assert.equal(m.refusal(resolve)?.code, "unknown_request");
  });

  it("restarts a harness killed by a signal it did not send, once, and resumes the session", () => {
    const { m } = started();
    const crash = m.onGone(gone(null, "SIGKILL"));
    assert.deepEqual(kinds(crash), ["disarm_timer", "emit:harness.exited", "start_harness", "arm_timer"]);
    const ready = m.onFact({ kind: "ready", pid: 43, resumePoint: { resumedAfterMessageSeq: 7 } });
    // The resumed session's goal capability and snapshot come again (runtime.md §9: after every resume).
    assert.deepEqual(kinds(ready), [
      "disarm_timer",
      "emit:harness.ready",
      "open_session",
      "emit:session.reconciled",
      "emit:session.capabilities.updated",
      "emit:session.goal.snapshot",
      "start_turn",
    ]);
    assert.deepEqual((ready[3] as any).payload, { resumedAfterMessageSeq: 7, restart: 1 });
    const second = m.onGone(gone(null, "SIGKILL"));
    assert.equal(terminalOf(second).reconciliation.reason, "harness_process_failed", "the second crash ends the run");
  });

  it("never restarts a harness that exits while its turn is being interrupted, nor one its driver ended: the prompt is not sent again", () => {
    for (const [why, exit, endedByDriver] of [
      ["interrupt", "SIGKILL", false],
      ["driver", "SIGTERM", true],
    ] as const) {
      const { m } = started();
      if (why === "interrupt") m.apply(command("turn.interrupt", { reason: "operator" }));
      const effects = m.onGone({ ...gone(null, exit), endedByDriver });
      assert.equal(
        effects.some((e) => e.kind === "start_harness" || e.kind === "start_turn"),
        false,
        `${why}: ${kinds(effects).join(", ")}`,
      );
      assert.ok(terminalOf(effects), `${why}: the run ends`);
    }
  });

  it("a request still pending when its harness is gone, or when the run ends, is cancelled as an event; a late resolve is refused", () => {
    const request = (id: string) => ({
      kind: "event" as const,
      eventType: "runtime_request.created",
      payload: {
        request: {
          schema: "paperclip.runtime_request.v1",
          requestKind: "runtime",
          requestId: id,
          type: "permission",
          status: "pending",
          prompt: "Allow?",
        },
      },
    });
    const cancelled = (effects: RunEffect[]) =>
      effects.flatMap((e) =>
        e.kind === "emit" && e.eventType === "runtime_request.cancelled" ? [(e.payload as any).requestId] : [],
      );
    const crashed = started().m;
    crashed.onFact(request("request_1"));
    const restart = crashed.onGone(gone(null, "SIGKILL"));
    assert.deepEqual(cancelled(restart), ["request_1"]);
    assert.ok(
      kinds(restart).indexOf("emit:runtime_request.cancelled") < kinds(restart).indexOf("emit:harness.exited"),
      kinds(restart).join(", "),
    );
    assert.equal(
      crashed.refusal(command("request.resolve", { requestId: "request_1", resolution: { action: "accept" } }))?.code,
      "unknown_request",
    );
    const ended = started().m;
    ended.onFact(request("request_2"));
    ended.onFact({ kind: "violation", message: "broken" }); // an untrusted harness's own cancellations are not believed
    const end = ended.onGone(gone(null, "SIGTERM"));
    assert.deepEqual(cancelled(end), ["request_2"]);
    assert.ok(terminalOf(end));
  });

  it("fails closed on a harness that does not say ready in time", () => {
    const m = machine();
    m.apply(command("run.prepare"));
    const out = m.onTimer("ready");
    assert.deepEqual(kinds(out), ["emit:harness.diagnostic", "stop_harness", "command_done"]);
    assert.match((out[0] as any).payload.message, /did not say ready/);
  });

  it("fails closed on an event that can never be carried: a P0 diagnostic, then a failed terminal that says why", () => {
    const { m } = started();
    const out = [
      ...m.onEventRefused("item.completed", "event_too_large", "a 20000-byte P1 item.completed can never fit"),
      ...m.onGone(gone(null, "SIGKILL")),
    ];
    const diagnostic = out.find((e) => e.kind === "emit" && e.eventType === "runner.diagnostic") as any;
    assert.equal(diagnostic.payload.code, "event_refused");
    const terminal = terminalOf(out);
    assert.equal(terminal.runTerminalState, "failed");
    assert.equal(terminal.stopReason.code, "event_refused");
    assert.match(terminal.stopReason.message, /item\.completed/);
    assert.deepEqual(m.onEventRefused("x", "y", "z"), [], "a second refusal adds nothing");
  });

  it("cancels, and refuses every command after the terminal", () => {
    const { m } = started();
    const out = m.apply(command("run.cancel"));
    assert.deepEqual(kinds(out), ["stop_harness", "command_done"]);
    const end = m.onGone(gone(null, "SIGTERM"));
    assert.equal(terminalOf(end).reconciliation.reason, "run_cancelled");
    assert.equal(m.refusal(command("turn.interrupt"))?.code, "run_terminal");
  });

  it("keeps the harness's own outcome once its leader has exited: a later controller close, signal or cancel does not turn it into cancelled", () => {
    for (const stop of [
      (m: RunMachine) => m.stop("controller_closed"),
      (m: RunMachine) => m.stop("cancelled"),
      (m: RunMachine) => m.apply(command("run.cancel")),
    ]) {
      const { m } = started();
      m.onFact({ kind: "result", payload: result() });
      m.onFact({ kind: "exited", exit: { exitCode: 0, signal: null, success: true } });
      // The controller closes inside the drain window: the harness is gone, its group not yet reaped.
      assert.ok(!kinds(stop(m)).includes("stop_harness"), "a harness that has exited is not stopped again");
      const end = m.onGone(gone(0));
      assert.equal(terminalOf(end).runTerminalState, "succeeded");
      assert.equal(terminalOf(end).reconciliation.reason, "successful_process_and_result");
    }
    const failed = started().m;
    failed.onFact({ kind: "exited", exit: { exitCode: 7, signal: null, success: false } });
    failed.stop("controller_closed");
    assert.equal(
      terminalOf(failed.onGone(gone(7))).reconciliation.reason,
      "harness_process_failed",
      "a failed exit is the harness's outcome too",
    );
  });

  it("still cancels a harness that was killed by a signal it did not send (no outcome of its own)", () => {
    const { m } = started();
    m.onFact({ kind: "exited", exit: { exitCode: null, signal: "SIGKILL", success: false } });
    assert.ok(kinds(m.stop("controller_closed")).includes("stop_harness"));
    assert.equal(terminalOf(m.onGone(gone(null, "SIGKILL"))).reconciliation.reason, "controller_closed");
  });

  it("suspends with no terminal: the harness is ended, its exit reported, the command done once it is gone", () => {
    const { m } = started();
    assert.deepEqual(kinds(m.suspend()), ["stop_harness"]);
    const out = m.onGone(gone(null, "SIGTERM"));
    assert.deepEqual(kinds(out), ["disarm_timer", "emit:harness.exited", "command_done"]);
    assert.equal((out[1] as any).payload.suspended, true);
    assert.ok(!m.terminated);
  });
});
