import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { decodeLine } from "../../src/contract/decode.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { LocalRunner } from "../../src/runner/local-runner.js";
import { AT } from "../contract/samples.js";
import { within } from "../support/within.js";
import { writeSleeperScript } from "../support/scripts.js";

/**
 * A stalled run through the local runner and a real fake-harness process, read back from the
 * runner's stream (the independent record). Short limits keep the test quick; nothing here
 * measures time: the order of the records is what is checked.
 */
async function stalledRun(scriptPath: string, delayMs: number) {
  const lines: string[] = [];
  const runner = new LocalRunner(
    {
      driver: new FakeHarnessDriver({ scriptPath, delayMs }),
      readyTimeoutMs: 30_000,
      stall: { limitMs: 300, graceMs: 300 },
      runId: "run_stall",
      sessionId: "session_stall",
      runnerId: "runner_stall",
    },
    { write: (line) => (lines.push(line), true), onDrain: () => {} },
  );
  let seq = 0;
  for (const type of ["run.prepare", "session.open", "turn.start"])
    runner.acceptLine(
      JSON.stringify({
        schema: "paperclip.prp.command.v1",
        commandId: `c${++seq}`,
        controllerSeq: seq,
        type,
        issuedAt: AT,
        payload: {},
      }),
    );
  await within(runner.done, 60_000, "the stalled run to end");
  const events = lines
    .map((l) => decodeLine(l, "runner-stream-record"))
    .flatMap((d) => (d.ok && d.value.kind === "event" ? [d.value.event] : []));
  const terminals = events.filter((e) => e.eventType === "run.terminal");
  assert.equal(terminals.length, 1, "exactly one terminal");
  const marks = events.flatMap((e) =>
    e.eventType === "runner.diagnostic"
      ? [String((e.payload as Record<string, unknown>).code)]
      : e.eventType === "turn.interrupted" || e.eventType === "run.terminal"
        ? [e.eventType]
        : [],
  );
  return { terminal: terminals[0]!.payload as Record<string, any>, marks, events };
}

describe("stall detection in a local run of the fake harness", () => {
  it("a harness silent while it waits for an interrupt honours it: interrupted, stopReason stalled", async () => {
    const { terminal, marks, events } = await stalledRun(resolveScriptPath("interrupted"), 0);
    assert.deepEqual(marks, ["run_stalled", "turn.interrupted", "run.terminal"]);
    const interrupted = events.find((e) => e.eventType === "turn.interrupted")!;
    assert.equal((interrupted.payload as Record<string, unknown>).reason, "stalled", "the interrupt says why");
    assert.equal(terminal.turnTerminalState, "interrupted");
    assert.equal(terminal.runTerminalState, "cancelled");
    assert.equal(terminal.stopReason?.code, "stalled");
  });

  it("a hostile harness alive and writing log noise, no event, is stalled and killed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-stall-"));
    try {
      const script = join(dir, "chatter.json");
      const noise = Array.from({ length: 200 }, (_, i) => [
        { kind: "log", stream: "stdout", text: `noise ${i}` },
        { kind: "delay", milliseconds: 50 },
      ]).flat();
      writeFileSync(
        script,
        JSON.stringify({
          schema: "paperclip.fake_harness.script.v1",
          name: "chatter",
          description: "Writes a log line every 50 ms for 10 s: alive and talking, never reporting progress.",
          steps: noise,
        }),
      );
      const { terminal, marks, events } = await stalledRun(script, 50);
      assert.deepEqual(marks, ["run_stalled", "run_stall_cancelled", "run.terminal"]);
      assert.equal(terminal.stopReason?.code, "stalled");
      const exited = events.find((e) => e.eventType === "harness.exited")!.payload as Record<string, any>;
      assert.equal(exited.signal, "SIGTERM", "ended by the runner while it still talked, not by itself");
      assert.ok(
        (exited.log.lines as string[]).some((l) => l.startsWith("noise ")),
        "its noise reached the runner",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a harness that sleeps through the interrupt is cancelled after the grace", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-stall-"));
    try {
      const script = writeSleeperScript(dir);
      const { terminal, marks } = await stalledRun(script, 600_000);
      assert.deepEqual(marks, ["run_stalled", "run_stall_cancelled", "run.terminal"]);
      assert.equal(terminal.turnTerminalState, "cancelled");
      assert.equal(terminal.runTerminalState, "cancelled");
      assert.equal(terminal.stopReason?.code, "stalled");
      assert.equal(terminal.stopReason?.kind, "stall");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
