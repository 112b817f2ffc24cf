import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeLine } from "../../src/contract/decode.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { LocalRunner } from "../../src/runner/local-runner.js";
import { RunMachine, type RunMachineOptions } from "../../src/runner/run-machine.js";
import { AT } from "../contract/samples.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";
import { command, throughSessionOpen } from "./machine-steps.js";

const machine = (options: Partial<RunMachineOptions> = {}) =>
  new RunMachine({ runId: "run_1", sessionId: "session_1", harnessCommand: "fake", ...options });

describe("turn.steer in the run machine: a queued follow-up of the active turn", () => {
  it("is refused without an active turn, and once the turn has ended", () => {
    const m = machine({ followUps: true, harnessKind: "acp" });
    throughSessionOpen(m);
    assert.equal(m.refusal(command("turn.steer", { text: "more" }))?.code, "no_active_turn");
    m.apply(command("turn.start", { turnId: "turn_1" }));
    assert.equal(m.refusal(command("turn.steer", { text: "more" })), null);
    assert.deepEqual(
      m.apply(command("turn.steer", { text: "more" })).filter((e) => e.kind === "steer" || e.kind === "command_done"),
      [{ kind: "steer", text: "more" }, { kind: "command_done" }],
      "the driver gets the text and the command is done",
    );
    m.onFact({ kind: "event", eventType: "turn.completed", payload: { stopReason: "end_turn" } });
    assert.equal(m.refusal(command("turn.steer", { text: "more" }))?.code, "no_active_turn");
  });

  it("is refused steer_unsupported by a harness that cannot take a follow-up, saying which", () => {
    const m = machine({ harnessKind: "fake script" });
    throughSessionOpen(m);
    m.apply(command("turn.start", { turnId: "turn_1" }));
    const refused = m.refusal(command("turn.steer", { text: "more" }));
    assert.equal(refused?.code, "steer_unsupported");
    assert.match(refused!.reason, /this harness \(fake script\) cannot take a follow-up/);
  });

  it("needs some text", () => {
    const m = machine({ followUps: true });
    throughSessionOpen(m);
    m.apply(command("turn.start", { turnId: "turn_1" }));
    for (const payload of [{}, { text: "  " }, { text: 3 }])
      assert.equal(m.refusal(command("turn.steer", payload))?.code, "invalid_payload", JSON.stringify(payload));
  });

  it("is refused steer_unsupported by a local run of the fake harness", async () => {
    const lines: string[] = [];
    const runner = new LocalRunner(
      {
        driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath("interrupted"), delayMs: 0 }),
        readyTimeoutMs: 30_000,
        runId: "run_steer",
        sessionId: "session_steer",
        runnerId: "runner_steer",
      },
      { write: (line) => (lines.push(line), true), onDrain: () => {} },
    );
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
    const records = () =>
      lines.map((l) => decodeLine(l, "runner-stream-record")).flatMap((d) => (d.ok ? [d.value] : []));
    const receipt = () =>
      records().flatMap((r) => (r.kind === "receipt" && r.receipt.type === "turn.steer" ? [r.receipt] : []))[0];
    try {
      ["run.prepare", "session.open", "turn.start"].forEach((type) => send(type));
      await until(
        () => records().some((r) => r.kind === "event" && r.event.eventType === "turn.submitted"),
        "the turn to start",
      );
      send("turn.steer", { text: "more" });
      await until(() => receipt() !== undefined, "the turn.steer receipt");
      assert.equal(receipt()?.code, "steer_unsupported", JSON.stringify(receipt()));
      assert.match(receipt()?.reason ?? "", /fake script/);
    } finally {
      send("run.cancel");
      await within(runner.done, 30_000, "the run to end");
    }
  });
});
