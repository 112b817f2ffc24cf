import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { decodeLine } from "../../src/contract/decode.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { LocalRunner } from "../../src/runner/local-runner.js";
import { MAX_ATTRIBUTE_CHARS, MAX_OPEN_TOOL_CALLS, RunSpans } from "../../src/telemetry/run-spans.js";
import { AT } from "../contract/samples.js";
import { fromReadable, runTreeProblems, type SeenSpan } from "../support/span-tree.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";

function memoryTracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { tracer: provider.getTracer("test"), spans: () => exporter.getFinishedSpans().map(fromReadable) };
}

/** A local run of a fake-harness script with its spans in memory; `steer` sends a turn.steer the fake harness refuses. */
async function tracedRun(script: string, runId: string) {
  const memory = memoryTracer();
  const lines: string[] = [];
  const runner = new LocalRunner(
    {
      driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath(script), delayMs: 0 }),
      readyTimeoutMs: 30_000,
      runId,
      sessionId: `session_${runId}`,
      runnerId: `runner_${runId}`,
      trace: { runnerId: `runner_${runId}`, tracer: memory.tracer },
    },
    { write: (line) => (lines.push(line), true), onDrain: () => {} },
  );
  const records = () => lines.map((l) => decodeLine(l, "runner-stream-record")).flatMap((d) => (d.ok ? [d.value] : []));
  let seq = 0;
  const send = (type: string, payload: Record<string, unknown> = {}) =>
    runner.acceptLine(
      JSON.stringify({
        schema: "paperclip.prp.command.v1",
        commandId: `c${++seq}`,
        controllerSeq: seq,
        type,
        issuedAt: AT,
        payload,
      }),
    );
  ["run.prepare", "session.open"].forEach((type) => send(type));
  send("turn.start", { turnId: "turn_1" });
  await until(
    () => records().some((r) => r.kind === "event" && r.event.eventType === "turn.started"),
    "the turn to start",
  );
  send("turn.steer", { text: "more" }); // the fake harness takes no follow-up: refused
  await within(runner.done, 30_000, `the ${script} run to end`);
  const events = records().flatMap((r) => (r.kind === "event" ? [r.event] : []));
  const itemIds = [...new Set(events.filter((e) => e.eventType === "item.started").map((e) => e.itemId!))];
  return { spans: memory.spans(), itemIds, commands: ["c1", "c2", "c3", "c4"] };
}

const named = (spans: SeenSpan[], name: string) => spans.filter((s) => s.name === name);

describe("run spans: a local fake-harness run traced into memory", () => {
  it("has one prp.run, its prp.turn, the tool calls under the turn and a span per command, with the ids", async () => {
    const { spans, itemIds, commands } = await tracedRun("happy-path", "run_traced");
    assert.ok(itemIds.length >= 2, `the script's items: ${itemIds.join(", ")}`);
    assert.deepEqual(runTreeProblems(spans, { runId: "run_traced", toolCalls: itemIds, commands }), []);
    const [run] = named(spans, "prp.run");
    assert.equal(run!.attributes["prp.runner.id"], "runner_run_traced");
    assert.equal(run!.attributes["prp.outcome"], "succeeded");
    assert.equal(run!.error, false);
    assert.equal(named(spans, "prp.turn")[0]!.attributes["prp.turn.id"], "turn_1");
    const steer = spans.find((s) => s.attributes["prp.command.id"] === "c4")!;
    assert.equal(steer.name, "prp.command turn.steer");
    assert.equal(steer.attributes["prp.outcome"], "refused");
    // Refused either way: the fake harness takes no follow-up, and its short turn may have ended first.
    assert.ok(
      ["steer_unsupported", "no_active_turn"].includes(String(steer.attributes["prp.refusal.code"])),
      String(steer.attributes["prp.refusal.code"]),
    );
    assert.equal(spans.find((s) => s.attributes["prp.command.id"] === "c3")!.attributes["prp.outcome"], "applied");
    // Never the agent's words: no attribute carries the tool output the script wrote.
    assert.ok(!JSON.stringify(spans.map((s) => s.attributes)).includes("npm test: 12 passing"));
  });

  it("marks a failed run's span ERROR", async () => {
    const { spans } = await tracedRun("error", "run_failing");
    const [run] = named(spans, "prp.run");
    assert.equal(run!.attributes["prp.outcome"], "failed");
    assert.equal(run!.error, true);
  });
});

describe("the run tree checker (oracle)", () => {
  it("rejects a tree with the turn removed, a tool call duplicated, a command missing or a span in another trace", async () => {
    const { spans, itemIds, commands } = await tracedRun("happy-path", "run_oracle");
    const expect = { runId: "run_oracle", toolCalls: itemIds, commands };
    assert.deepEqual(runTreeProblems(spans, expect), []);
    const noTurn = spans.filter((s) => s.name !== "prp.turn");
    assert.match(runTreeProblems(noTurn, expect).join("\n"), /prp\.tool_call .* is under nothing/);
    const tool = named(spans, "prp.tool_call")[0]!;
    const twice = [...spans, { ...tool, spanId: "f".repeat(16) }];
    assert.match(runTreeProblems(twice, expect).join("\n"), /2 prp\.tool_call spans/);
    const noCommand = spans.filter((s) => s.attributes["prp.command.id"] !== "c2");
    assert.match(runTreeProblems(noCommand, expect).join("\n"), /0 prp\.command spans for c2/);
    const elsewhere = spans.map((s) => (s.name === "prp.turn" ? { ...s, traceId: "0".repeat(31) + "1" } : s));
    assert.match(runTreeProblems(elsewhere, expect).join("\n"), /prp\.turn is in trace/);
    assert.match(runTreeProblems([], expect).join("\n"), /0 prp\.run spans/);
  });
});

describe("run spans against a hostile agent", () => {
  it("cuts agent-controlled ids and bounds the tool calls open at once", () => {
    const memory = memoryTracer();
    const spans = new RunSpans({ runId: "run_h", runnerId: "runner_h", sessionId: "session_h" }, memory.tracer);
    spans.event({ eventType: "turn.started", payload: {}, turnId: "t".repeat(100_000) });
    for (let i = 0; i < MAX_OPEN_TOOL_CALLS * 4; i++)
      spans.event({
        eventType: "item.started",
        payload: { kind: "k".repeat(100_000) },
        itemId: `${"i".repeat(500)}${i}`,
      });
    spans.event({ eventType: "run.terminal", payload: { runTerminalState: "succeeded" } });
    const finished = memory.spans();
    assert.equal(named(finished, "prp.tool_call").length, MAX_OPEN_TOOL_CALLS);
    for (const s of finished)
      for (const value of Object.values(s.attributes))
        assert.ok(
          String(value).length <= MAX_ATTRIBUTE_CHARS,
          `${s.name}: an attribute of ${String(value).length} chars`,
        );
    assert.equal(named(finished, "prp.tool_call")[0]!.attributes["prp.outcome"], "unfinished");
    assert.equal(named(finished, "prp.run").length, 1);
  });
});
