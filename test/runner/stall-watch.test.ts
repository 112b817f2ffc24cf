import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { HarnessFact, HarnessGone } from "../../src/harness/harness-driver.js";
import { RunMachine, type RunEffect, type RunMachineOptions, type Timer } from "../../src/runner/run-machine.js";
import { result } from "../contract/samples.js";
import { ManualTimers } from "../support/manual-timers.js";
import { seeded } from "../support/seed.js";
import { command, throughSessionOpen } from "./machine-steps.js";

const LIMIT = 60_000;
const GRACE = 5_000;

/**
 * The pure run machine with its timers on an injected clock: the shell RunController is, minus
 * the harness. Every effect is kept, in order: the record the tests read.
 */
class ClockedRun {
  readonly clock = new ManualTimers();
  readonly log: RunEffect[] = [];
  private readonly armed = new Map<Timer, () => void>();
  readonly m: RunMachine;

  constructor(options: Partial<RunMachineOptions> = {}) {
    this.m = new RunMachine({
      runId: "run_1",
      sessionId: "session_1",
      harnessCommand: "fake",
      stall: { limitMs: LIMIT, graceMs: GRACE },
      ...options,
    });
    this.take(throughSessionOpen(this.m));
    this.take(this.m.apply(command("turn.start", { turnId: "turn_1" })));
  }

  take(effects: RunEffect[]): void {
    for (const e of effects) {
      this.log.push(e);
      if (e.kind === "arm_timer") {
        this.armed.get(e.timer)?.();
        this.armed.set(
          e.timer,
          this.clock.after(e.ms, () => {
            this.armed.delete(e.timer);
            this.take(this.m.onTimer(e.timer));
          }),
        );
      } else if (e.kind === "disarm_timer") {
        this.armed.get(e.timer)?.();
        this.armed.delete(e.timer);
      } else if (e.kind === "ended") {
        for (const cancel of this.armed.values()) cancel();
        this.armed.clear();
      }
    }
  }

  fact(fact: HarnessFact): void {
    this.take(this.m.onFact(fact));
  }

  event(eventType: string, payload: Record<string, unknown> = {}): void {
    this.fact({ kind: "event", eventType, payload });
  }

  gone(exitCode: number | null, signal: string | null = null): void {
    const g: HarnessGone = {
      exit: { exitCode, signal, success: exitCode === 0 },
      log: { lines: [], retainedBytes: 0, droppedLines: 0 },
    };
    this.take(this.m.onGone(g));
  }

  /** The run's record as `emit:type` / driver call names, from the turn's start on. */
  trail(): string[] {
    const from = this.log.findIndex((e) => e.kind === "start_turn");
    return this.log
      .slice(from)
      .flatMap((e) =>
        e.kind === "emit"
          ? [`emit:${e.eventType}`]
          : e.kind === "interrupt" || e.kind === "stop_harness"
            ? [e.kind]
            : [],
      );
  }

  emits(type: string): Array<Record<string, unknown>> {
    return this.log.flatMap((e) => (e.kind === "emit" && e.eventType === type ? [e.payload] : []));
  }

  terminals(): Array<Record<string, any>> {
    return this.emits("run.terminal");
  }

  stallDiagnostics(): Array<Record<string, unknown>> {
    return this.emits("runner.diagnostic").filter((p) => p.code === "run_stalled");
  }
}

describe("stall detection by progress (the run machine on an injected clock)", () => {
  it("a silent turn: run_stalled, then the interrupt; a harness that honours it ends interrupted, stopReason stalled", () => {
    const r = new ClockedRun();
    r.clock.advance(LIMIT - 1);
    assert.equal(r.stallDiagnostics().length, 0, "not stalled one millisecond before the limit");
    r.clock.advance(1);
    const [diagnostic] = r.stallDiagnostics();
    assert.deepEqual(
      { limitMs: diagnostic?.limitMs, silentMs: diagnostic?.silentMs, graceMs: diagnostic?.graceMs },
      { limitMs: LIMIT, silentMs: LIMIT, graceMs: GRACE },
    );
    assert.ok(
      r.log.some((e) => e.kind === "interrupt" && e.reason === "stalled"),
      "the turn is interrupted",
    );
    r.event("turn.interrupted", { reason: "stalled" });
    r.gone(130);
    r.clock.advance(10 * GRACE);
    const terminals = r.terminals();
    assert.equal(terminals.length, 1, "exactly one terminal");
    assert.equal(terminals[0]!.turnTerminalState, "interrupted");
    assert.equal(terminals[0]!.runTerminalState, "cancelled");
    assert.equal(terminals[0]!.stopReason.code, "stalled");
    assert.equal(terminals[0]!.stopReason.kind, "stall");
    assert.deepEqual(
      r.trail().filter((t) => t === "emit:runner.diagnostic" || t === "interrupt" || t === "emit:run.terminal"),
      ["emit:runner.diagnostic", "interrupt", "emit:run.terminal"],
    );
  });

  it("a harness that ignores the interrupt is cancelled after the grace, still stalled", () => {
    const r = new ClockedRun();
    r.clock.advance(LIMIT);
    r.clock.advance(GRACE - 1);
    assert.equal(
      r.log.some((e) => e.kind === "stop_harness"),
      false,
      "not cancelled before the grace",
    );
    r.clock.advance(1);
    assert.ok(
      r.log.some((e) => e.kind === "stop_harness"),
      "the harness group is ended",
    );
    r.gone(null, "SIGTERM");
    const terminals = r.terminals();
    assert.equal(terminals.length, 1);
    assert.equal(terminals[0]!.turnTerminalState, "cancelled");
    assert.equal(terminals[0]!.runTerminalState, "cancelled");
    assert.equal(terminals[0]!.stopReason.code, "stalled");
    assert.deepEqual(
      r.trail().filter((t) => !t.startsWith("emit:harness.") && !t.startsWith("emit:runtime_request")),
      ["emit:runner.diagnostic", "interrupt", "emit:runner.diagnostic", "stop_harness", "emit:run.terminal"],
    );
    assert.equal(r.emits("runner.diagnostic")[1]!.code, "run_stall_cancelled");
  });

  it("progress resets the watch: an event every limit/2 is never stalled", () => {
    const r = new ClockedRun();
    for (let i = 0; i < 20; i++) {
      r.clock.advance(LIMIT / 2);
      r.event("item.delta", { text: `line ${i}` });
    }
    assert.equal(r.stallDiagnostics().length, 0);
    r.clock.advance(LIMIT);
    assert.equal(r.stallDiagnostics().length, 1, "silence after the progress still stalls");
  });

  it("waiting on a person is not a stall: an open request pauses the watch until it is answered", () => {
    const r = new ClockedRun();
    r.clock.advance(LIMIT - 10);
    r.event("runtime_request.created", {
      request: {
        schema: "paperclip.runtime_request.v1",
        requestKind: "runtime",
        requestId: "req_1",
        type: "input",
        status: "pending",
        prompt: "Which branch?",
      },
    });
    assert.equal(r.emits("harness.diagnostic").length, 0, "the request is a valid one");
    r.clock.advance(10 * LIMIT);
    assert.equal(r.stallDiagnostics().length, 0, "ten limits with the question open");
    r.event("runtime_request.resolved", { requestId: "req_1" });
    r.clock.advance(LIMIT - 1);
    assert.equal(r.stallDiagnostics().length, 0, "the answer restarts the watch from zero");
    r.clock.advance(1);
    assert.equal(r.stallDiagnostics().length, 1);
  });

  it("a hostile harness alive and writing non-progress noise is still stalled", () => {
    const r = new ClockedRun();
    for (let i = 0; i < 10; i++) {
      r.clock.advance(LIMIT / 10 - 1);
      // What a driver reports of lines it could not read, and an exit it saw: neither is progress.
      r.event("harness.diagnostic", { code: "noise", message: "x".repeat(100) });
    }
    r.clock.advance(10);
    assert.equal(r.stallDiagnostics().length, 1);
  });

  it("a turn that ended, an operator's interrupt, or a 0 limit: no stall", () => {
    const ended = new ClockedRun();
    ended.event("turn.completed", {});
    ended.clock.advance(10 * LIMIT);
    assert.equal(ended.stallDiagnostics().length, 0, "after the turn ended");

    const interrupted = new ClockedRun();
    interrupted.take(interrupted.m.apply(command("turn.interrupt", { reason: "operator" })));
    interrupted.clock.advance(10 * LIMIT);
    assert.equal(interrupted.stallDiagnostics().length, 0, "after an operator's interrupt");

    const off = new ClockedRun({ stall: { limitMs: 0, graceMs: GRACE } });
    off.clock.advance(100 * LIMIT);
    assert.equal(off.stallDiagnostics().length, 0);
    assert.equal(
      off.log.some((e) => (e.kind === "arm_timer" || e.kind === "disarm_timer") && e.timer.startsWith("stall")),
      false,
      "a 0 limit arms no stall timer",
    );
  });

  it("a stall racing a normal completion: exactly one terminal, stalled only if the stall came first", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: LIMIT }), { maxLength: 6 }),
        fc.integer({ min: 0, max: 2 * LIMIT + GRACE }),
        fc.boolean(),
        fc.boolean(),
        (gaps, completeAt, honours, exitsAfterTurn) => {
          const r = new ClockedRun();
          // Progress at the gaps' times, then the harness completes its turn at `completeAt`
          // (from the start): scheduled on the same clock, so it may land on the stall's tick.
          let at = 0;
          for (const gap of gaps) {
            at += gap;
            r.clock.after(at, () => r.event("item.delta", { text: "p" }));
          }
          r.clock.after(completeAt, () => {
            if (r.m.terminated) return;
            r.fact({ kind: "result", payload: result() });
            r.event("turn.completed", {});
            if (exitsAfterTurn) r.gone(0);
          });
          r.clock.advance(completeAt + LIMIT + GRACE + 1);
          // The harness goes: killed once the runner ended its group, else on its own.
          if (!r.m.terminated && r.log.some((e) => e.kind === "stop_harness")) r.gone(null, "SIGTERM");
          if (!r.m.terminated) r.gone(honours ? 130 : 0);
          const terminals = r.terminals();
          assert.equal(terminals.length, 1, "exactly one terminal");
          const stalled = r.stallDiagnostics().length === 1;
          assert.equal(terminals[0]!.stopReason?.code === "stalled", stalled, "stalled exactly when it stalled");
          if (!stalled && exitsAfterTurn) assert.equal(terminals[0]!.runTerminalState, "succeeded");
          const terminalAt = r.log.findIndex((e) => e.kind === "emit" && e.eventType === "run.terminal");
          assert.equal(
            r.log.slice(terminalAt + 1).some((e) => e.kind === "emit"),
            false,
            "nothing follows the terminal",
          );
        },
      ),
      seeded("stall racing completion", 300),
    );
  });
});
