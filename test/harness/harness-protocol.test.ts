import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { FakeHarness, type Step } from "../../src/harness/fake-harness.js";
import {
  COMMAND_SCHEMA,
  MESSAGE_SCHEMA,
  parseHarnessCommand,
  parseHarnessMessage,
  type HarnessCommandPayloads,
  type HarnessCommandType,
} from "../../src/harness/harness-protocol.js";
import { loadScript, scenariosDir } from "../../src/harness/script-file.js";

/** A command line exactly as the run controller writes one. */
const commandLine = <K extends HarnessCommandType>(commandSeq: number, type: K, payload: HarnessCommandPayloads[K]) =>
  JSON.stringify({ schema: COMMAND_SCHEMA, commandSeq, type, payload });
const messageLine = (type: string, payload: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ schema: MESSAGE_SCHEMA, messageSeq: 2, type, payload, ...extra });

/** Plays a scenario with every command it waits for already queued; returns its stdout lines. */
async function play(path: string): Promise<string[]> {
  const loaded = loadScript(path);
  assert.ok(loaded.ok);
  const lines: string[] = [];
  const harness = new FakeHarness(
    loaded.value.script,
    { writeStdout: (l) => lines.push(l), writeStderr: () => {}, exit: () => {} },
    { delayMs: 0, commandWaitMs: 1_000, resolutionWaitMs: 1_000 },
  );
  const resolutions = (loaded.value.script.steps as Step[]).flatMap((s) =>
    s.kind === "await_resolution" ? [(s as { request_id: string }).request_id] : [],
  );
  const commands = [
    commandLine(1, "session.open", { normalizedSessionId: "session_1", driverSessionId: "driver_session_1" }),
    commandLine(2, "turn.start", { turnId: "turn_1", text: "Play the script." }),
    ...resolutions.map((requestId, i) =>
      commandLine(3 + i, "request.resolve", { requestId, resolution: { action: "accept", text: "main" } }),
    ),
    commandLine(3 + resolutions.length, "turn.interrupt", { reason: "operator" }),
  ];
  for (const line of commands) {
    const command = parseHarnessCommand(line);
    assert.ok(command, `the harness refuses the runner's own command ${line}`);
    harness.receive(command);
  }
  await harness.run();
  return lines;
}

describe("the fake harness protocol is checked by its schemas", () => {
  // linger spawns a worker that outlives the harness: the runner scenarios cover it.
  const scenarios = readdirSync(scenariosDir()).filter((f) => f.endsWith(".json") && f !== "linger.json");

  for (const file of scenarios) {
    it(`accepts every message the fake harness writes for ${file}`, async () => {
      const lines = await play(join(scenariosDir(), file));
      assert.ok(lines.length >= 4, "ready, session.started, phase and turn.started at least");
      for (const line of lines) {
        const message = parseHarnessMessage(line);
        assert.notEqual(typeof message, "string", `${String(message)}\n${line.slice(0, 300)}`);
      }
    });
  }

  it("parses a message into its typed form", () => {
    const message = parseHarnessMessage(
      messageLine("event", { eventType: "item.delta", itemId: "item_1", payload: { text: "hi" } }),
    );
    assert.deepEqual(message, {
      schema: MESSAGE_SCHEMA,
      messageSeq: 2,
      type: "event",
      payload: { eventType: "item.delta", itemId: "item_1", payload: { text: "hi" } },
    });
  });

  it("refuses a message with the path of what is wrong and why", () => {
    const cases: Array<[string, RegExp]> = [
      ["{not json", /^harness message is not valid: \/: input is not JSON/],
      [
        JSON.stringify({
          schema: "paperclip.fake_harness.command.v1",
          commandSeq: 1,
          type: "turn.start",
          payload: { turnId: "t" },
        }),
        /^harness message is not valid: \/schema: expected a fake-harness-message, found schema "paperclip.fake_harness.command.v1"/,
      ],
      [messageLine("progress", {}), /^harness message is not valid: \/type: .*must be one of "ready", "event"/],
      [messageLine("ready", {}, { messageSeq: 0 }), /^harness message is not valid: \/messageSeq: .*must be >= 1/],
      [
        messageLine("event", { payload: {} }),
        /^harness message is not valid: \/payload: .*required property "eventType"/,
      ],
      [
        messageLine("event", { eventType: "item.delta", payload: "hi" }),
        /^harness message is not valid: \/payload\/payload: .*must be object/,
      ],
      [messageLine("log", { text: 42 }), /^harness message is not valid: \/payload\/text: .*must be string/],
      [
        messageLine("ready", { pid: 1 }),
        /^harness message is not valid: \/payload: .*must not have the property "pid"/,
      ],
    ];
    for (const [line, expected] of cases) assert.match(String(parseHarnessMessage(line)), expected);
  });

  it("parses the runner's commands and nothing else", () => {
    assert.deepEqual(parseHarnessCommand(commandLine(4, "turn.interrupt", { reason: "" })), {
      schema: COMMAND_SCHEMA,
      commandSeq: 4,
      type: "turn.interrupt",
      payload: { reason: "" },
    });
    for (const line of [
      "{not json",
      messageLine("ready", {}),
      JSON.stringify({ schema: COMMAND_SCHEMA, commandSeq: 1, type: "run.cancel", payload: {} }),
      JSON.stringify({ schema: COMMAND_SCHEMA, commandSeq: 1, type: "turn.start", payload: { text: "no turn id" } }),
      JSON.stringify({
        schema: COMMAND_SCHEMA,
        commandSeq: 1,
        type: "request.resolve",
        payload: { requestId: "r", resolution: "accept" },
      }),
    ]) {
      assert.equal(parseHarnessCommand(line), null, line);
    }
  });
});
