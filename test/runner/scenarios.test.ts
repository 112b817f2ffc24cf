import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { bundleFileProblems, type NativeExecutionBundle } from "../../src/bundle/native-execution.js";
import { decode } from "../../src/contract/index.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { runPrp } from "../cli/run-cli.js";
import { liveGroupMembers } from "../support/processes.js";
import { PATIENT_HARNESS } from "../support/scripts.js";

interface Ran {
  status: number | null;
  events: PrpEvent[];
  stderr: string;
  types: string[];
  terminal: Record<string, any>;
  bundlePath: string;
}

describe("local runner scenarios (runtime.md §4.6, wire.md §16.3)", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-scenarios-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  let serial = 0; // unique run ids and answer files in one directory, the same every time
  const run = (script: string, extra: string[] = []): Ran => {
    const runId = `run_${script.replace(/[^A-Za-z0-9]/g, "_")}_${++serial}`;
    const res = runPrp([
      "run",
      "--json",
      "--script",
      script,
      "--delay-ms",
      "0",
      "--run-id",
      runId,
      "--out",
      dir,
      ...PATIENT_HARNESS,
      ...extra,
    ]);
    const events = res.stdout
      .trimEnd()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as PrpEvent);
    const terminals = events.filter((e) => e.eventType === "run.terminal");
    assert.equal(terminals.length, 1, `exactly one run.terminal\n${res.stderr}`);
    assert.equal(events.at(-1)!.eventType, "run.terminal", "nothing follows run.terminal");
    events.forEach((e, i) => assert.equal(e.sourceSeq, i + 1, "contiguous sequence"));
    for (const e of events) assert.ok(decode(JSON.stringify(e)).ok, `every event passes the codec: ${e.eventType}`);
    return {
      status: res.status,
      events,
      stderr: res.stderr,
      types: events.map((e) => e.eventType),
      terminal: terminals[0]!.payload as Record<string, any>,
      bundlePath: join(dir, "runs", runId, "native-execution.json"),
    };
  };
  const states = (r: Ran) => [
    r.terminal.turnTerminalState,
    r.terminal.runTerminalState,
    r.terminal.reportedWorkDisposition,
    r.terminal.reconciliation.reason,
  ];
  const exitOf = (r: Ran) => r.events.find((e) => e.eventType === "harness.exited")!.payload as Record<string, any>;
  const answers = (value: unknown) => {
    const path = join(dir, `answers-${++serial}.json`);
    writeFileSync(path, JSON.stringify(value));
    return path;
  };

  it("happy-path: 19 events in order, completed/succeeded/done, exit 0, a valid bundle whose digests match", () => {
    const r = run("happy-path");
    assert.equal(r.status, 0);
    assert.deepEqual(r.types, [
      "runtime.phase.changed",
      "workspace.ready",
      "harness.starting",
      "harness.ready",
      "session.starting",
      "session.started",
      "runtime.phase.changed",
      "turn.submitted",
      "turn.started",
      "item.started",
      "item.delta",
      "item.completed",
      "item.started",
      "item.completed",
      "run.result.proposed",
      "turn.completed",
      "session.closed",
      "harness.exited",
      "run.terminal",
    ]);
    assert.deepEqual(states(r), ["completed", "succeeded", "done", "successful_process_and_result"]);
    assert.equal(exitOf(r).exitCode, 0);
    assert.equal(exitOf(r).semanticResultObserved, true);
    assert.equal(exitOf(r).log.lines.length, 5, "the five stdout logs reach the log tail");
    const bundleText = readFileSync(r.bundlePath);
    const bundle = decode(bundleText, { kind: "native-execution", maxBytes: 16 * 1024 * 1024 });
    assert.ok(bundle.ok, bundle.ok ? "" : bundle.error.message);
    assert.deepEqual(bundleFileProblems(r.bundlePath, bundle.value as NativeExecutionBundle), []);
    assert.equal((bundle.value as NativeExecutionBundle).transcript.eventCount, 19);
    assert.equal((bundle.value as NativeExecutionBundle).failure, null);
  });

  it("permission-input: two request.resolve commands, then success", () => {
    const r = run("permission-input", [
      "--answer",
      answers({
        request_permission_1: { action: "accept", choice: "allow" },
        request_input_1: { action: "submit", text: "main" },
      }),
    ]);
    assert.equal(r.status, 0);
    assert.equal(r.types.filter((t) => t === "runtime_request.created").length, 2);
    const resolved = r.events
      .filter((e) => e.eventType === "runtime_request.resolved")
      .map((e) => (e.payload as any).resolution);
    assert.deepEqual(resolved, [
      { action: "accept", choice: "allow" },
      { action: "submit", text: "main" },
    ]);
    assert.deepEqual(states(r), ["completed", "succeeded", "done", "successful_process_and_result"]);
  });

  it("permission-input without answers off a terminal: the run is cancelled, not left hanging", () => {
    const r = run("permission-input");
    assert.equal(r.status, 1);
    assert.match(r.stderr, /request_permission_1 .* needs an answer/);
    assert.deepEqual(states(r).slice(0, 2), ["cancelled", "cancelled"]);
    assert.equal(r.terminal.reconciliation.reason, "run_cancelled");
  });

  it("interactive-question: answered with a question response through request.resolve", () => {
    const response = {
      schema: "paperclip.question_response.v1",
      answers: { strategy: { selectedOptionIds: ["online"] }, notes: { text: "after 6pm" } },
    };
    const r = run("interactive-question", [
      "--answer",
      answers({ request_question_1: { action: "submit", response } }),
    ]);
    assert.equal(r.status, 0);
    assert.deepEqual(
      (r.events.find((e) => e.eventType === "runtime_request.resolved")!.payload as any).resolution.response,
      response,
    );
  });

  it("interactive-question: a response naming an unknown option is refused and the run cancelled", () => {
    const response = {
      schema: "paperclip.question_response.v1",
      answers: { strategy: { selectedOptionIds: ["sideways"] } },
    };
    const r = run("interactive-question", [
      "--answer",
      answers({ request_question_1: { action: "submit", response } }),
    ]);
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /request\.resolve .* rejected: binding_mismatch: .*option "sideways" does not belong to question "strategy"/,
    );
    assert.equal(r.terminal.reconciliation.reason, "run_cancelled");
    assert.ok(!r.types.includes("runtime_request.resolved"));
  });

  it("interrupted: exit 130, turn interrupted, run cancelled, yielded", () => {
    const r = run("interrupted");
    assert.equal(r.status, 1);
    assert.deepEqual(states(r), ["interrupted", "cancelled", "yielded", "turn_interrupted"]);
    assert.equal(exitOf(r).exitCode, 130);
    assert.ok(r.types.includes("turn.interrupted"));
  });

  it("error: exit 7 stays separate from the result: failed/failed/yielded", () => {
    const r = run("error");
    assert.deepEqual(states(r), ["failed", "failed", "yielded", "harness_process_failed"]);
    assert.equal(exitOf(r).exitCode, 7);
    assert.ok(r.types.indexOf("run.result.proposed") < r.types.indexOf("harness.exited"));
    assert.equal(r.terminal.harnessTerminalProposal.runTerminalState, "failed");
  });

  it("duplicate-terminal: the second proposal becomes a diagnostic; one run.terminal", () => {
    const r = run("duplicate-terminal");
    assert.equal(r.status, 0);
    const diagnostics = r.events
      .filter((e) => e.eventType === "harness.diagnostic")
      .map((e) => (e.payload as any).code);
    assert.deepEqual(diagnostics, ["duplicate_terminal_ignored"]);
    assert.equal(r.terminal.harnessTerminalProposal.runTerminalState, "succeeded", "the first proposal stands");
    assert.deepEqual(states(r), ["completed", "succeeded", "done", "successful_process_and_result"]);
  });

  it("linger: no process of the harness group remains, checked through /proc", () => {
    const r = run("linger");
    const pid = (r.events.find((e) => e.eventType === "harness.ready")!.payload as any).pid as number;
    assert.deepEqual(liveGroupMembers(pid), []);
    assert.deepEqual(states(r), ["interrupted", "cancelled", "yielded", "turn_interrupted"]);
    assert.equal(exitOf(r).semanticResultObserved, false);
  });

  it("oversized-line: a stdout frame over 64 KiB fails the run as a protocol violation", () => {
    const r = run("oversized-line");
    assert.deepEqual(states(r).slice(0, 2), ["failed", "failed"]);
    assert.equal(r.terminal.reconciliation.reason, "harness_protocol_violation");
    const diagnostic = r.events.find((e) => e.eventType === "harness.diagnostic")!.payload as any;
    assert.equal(diagnostic.code, "harness_protocol_violation");
    assert.match(diagnostic.message, /stdout line of 70\d{3} bytes, over the 65536-byte limit/);
    assert.ok(!r.types.includes("run.result.proposed"), "nothing the harness says after the violation is believed");
  });

  it("a duplicate turn command does not start a second turn", () => {
    const r = run("happy-path", ["--duplicate-turn-command"]);
    assert.match(r.stderr, /turn\.start .* rejected: turn_already_started/);
    assert.equal(r.types.filter((t) => t === "turn.submitted").length, 1);
    assert.equal(r.status, 0);
  });
});

describe("prp run --json | prp replay --events -", () => {
  it("the events of a live run replay into a complete session with the run's terminal", () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-pipe-"));
    try {
      const run = runPrp(["run", "--json", "--script", "error", "--delay-ms", "0", "--out", dir, ...PATIENT_HARNESS]);
      const summary = runPrp(["replay", "--events", "-", "--summary"], { input: run.stdout });
      assert.equal(summary.status, 0, summary.stderr);
      const parsed = JSON.parse(summary.stdout);
      assert.equal(parsed.integrity, "complete");
      assert.equal(parsed.timelineCount, run.stdout.trimEnd().split("\n").length);
      assert.deepEqual([parsed.turnTerminalState, parsed.runTerminalState], ["failed", "failed"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
