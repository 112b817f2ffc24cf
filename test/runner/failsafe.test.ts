import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, it } from "node:test";
import { decodeLine } from "../../src/contract/decode.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { installFailsafe } from "../../src/runner/failsafe.js";
import { LocalRunner } from "../../src/runner/local-runner.js";
import { AT } from "../contract/samples.js";
import { within } from "../support/within.js";

/** A stand-in for `process`: the test raises the errors nothing handled. */
function guarded(failRun: (message: string) => void) {
  const source = new EventEmitter();
  const exits: number[] = [];
  const log: string[] = [];
  installFailsafe(source, { failRun, exit: (code) => exits.push(code), log: (text) => log.push(text), exitCode: 70 });
  return { source, exits, log };
}

describe("the runner process's last guard (no error ends a run without a terminal)", () => {
  it("hands an uncaught exception or rejection to the run as a failure, with the error's first line, and logs the stack", () => {
    const failed: string[] = [];
    const { source, exits, log } = guarded((m) => failed.push(m));
    source.emit("uncaughtException", new TypeError("boom"));
    assert.deepEqual(failed, ["TypeError: boom"]);
    assert.deepEqual(exits, [], "the run ends by its terminal, not by an exit");
    assert.match(log[0]!, /^internal error: TypeError: boom\n\s+at /);
  });

  it("exits with its status when failing the run throws too, or a second error comes while the first is reported", () => {
    const throwing = guarded(() => {
      throw new Error("the sink is broken");
    });
    throwing.source.emit("unhandledRejection", "not even an Error");
    assert.deepEqual(throwing.exits, [70]);
    assert.match(
      throwing.log.join("\n"),
      /a thrown string: not even an Error[\s\S]*could not be failed cleanly: Error: the sink is broken/,
    );
    const twice = guarded(() => {});
    twice.source.emit("uncaughtException", new Error("first"));
    twice.source.emit("uncaughtException", new Error("second"));
    assert.deepEqual(twice.exits, [70]);
  });

  it("a local run given an internal error ends failed: a P0 runner_internal_error diagnostic, the harness ended, one terminal with that stopReason", async () => {
    const lines: string[] = [];
    const runner = new LocalRunner(
      {
        driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath("interrupted"), delayMs: 0 }),
        readyTimeoutMs: 30_000,
        runId: "run_guard",
        sessionId: "session_guard",
        runnerId: "runner_guard",
      },
      { write: (line) => (lines.push(line), true), onDrain: () => {} },
    );
    const { source } = guarded((m) => runner.failInternal(m));
    ["run.prepare", "session.open", "turn.start"].forEach((type, i) =>
      runner.acceptLine(
        JSON.stringify({
          schema: "paperclip.prp.command.v1",
          commandId: `c${i + 1}`,
          controllerSeq: i + 1,
          type,
          issuedAt: AT,
          payload: {},
        }),
      ),
    );
    const events = () =>
      lines
        .map((l) => decodeLine(l, "runner-stream-record"))
        .flatMap((d) => (d.ok && d.value.kind === "event" ? [d.value.event] : []));
    await within(
      new Promise<void>((resolve) => {
        const poll = setInterval(
          () => events().some((e) => e.eventType === "turn.submitted") && (clearInterval(poll), resolve()),
          10,
        );
      }),
      30_000,
      "the turn to start",
    );
    source.emit("uncaughtException", new RangeError("an index out of range"));
    const terminal = await within(runner.done, 30_000, "the failed terminal");
    assert.equal(terminal.runTerminalState, "failed");
    assert.equal(terminal.stopReason?.code, "runner_internal_error");
    const all = events();
    const diagnostic = all.find((e) => e.eventType === "runner.diagnostic");
    assert.deepEqual(diagnostic?.payload, {
      code: "runner_internal_error",
      message: "RangeError: an index out of range",
    });
    assert.equal(diagnostic?.priority, 0);
    assert.ok(
      all.some((e) => e.eventType === "harness.exited"),
      "the harness group was ended before the terminal",
    );
    assert.equal(all.filter((e) => e.eventType === "run.terminal").length, 1);
    assert.equal(all.at(-1)!.eventType, "run.terminal");
  });
});
