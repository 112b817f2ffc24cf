import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeLine } from "../../src/contract/decode.js";
import { encode } from "../../src/contract/encode.js";
import { CommandIntake } from "../../src/runner/command-intake.js";
import {
  eventRecordLine,
  parseStreamRecord,
  receiptRecordLine,
  STREAM_SCHEMA,
  type CommandReceipt,
} from "../../src/runner/stream.js";
import { command, event, json } from "../contract/samples.js";

const accepted: CommandReceipt = { commandId: "c1", controllerSeq: 1, type: "run.prepare", status: "accepted" };

/** The refusal of a stream line, as "path: message". */
const refusal = (line: string) => {
  const decoded = decodeLine(line, "runner-stream-record");
  return decoded.ok ? "accepted" : `${decoded.error.path}: ${decoded.error.message}`;
};

describe("paperclip.runner.stream.v1 records are checked by their schema", () => {
  it("reads back the event and receipt records the runner writes", () => {
    const eventLine = encode(event(1) as never, "event");
    assert.deepEqual(parseStreamRecord(eventRecordLine(eventLine)), {
      schema: STREAM_SCHEMA,
      kind: "event",
      event: JSON.parse(eventLine),
    });
    assert.deepEqual(parseStreamRecord(receiptRecordLine(accepted)), {
      schema: STREAM_SCHEMA,
      kind: "receipt",
      receipt: accepted,
    });
  });

  it("accepts every receipt the command rules give, for good and bad lines alike", () => {
    const intake = new CommandIntake(new Set(["run.prepare"]));
    const lines = [
      json(command(1, { commandId: "c1", controllerSeq: 1, type: "run.prepare", payload: {} })),
      json(command(1, { commandId: "c1", controllerSeq: 1, type: "run.prepare", payload: {} })),
      json(command(1, { commandId: "c2", controllerSeq: 5 })),
      json(command(1, { commandId: "c3", controllerSeq: 2, type: "turn.start" })),
      json(command(1, { commandId: "", controllerSeq: 1.5, type: 7 })),
      "{nope",
    ];
    const statuses = lines.map((line) => {
      const { receipt } = intake.admit(line);
      const record = parseStreamRecord(receiptRecordLine(receipt));
      assert.ok(
        record,
        `the stream refuses the receipt ${JSON.stringify(receipt)}: ${refusal(receiptRecordLine(receipt))}`,
      );
      return receipt.status;
    });
    assert.deepEqual(statuses, ["accepted", "duplicate", "rejected", "rejected", "rejected", "rejected"]);
  });

  it("refuses what is not a record of this stream", () => {
    for (const line of ["{nope", json(event(1)), JSON.stringify({ schema: STREAM_SCHEMA, kind: "heartbeat" })])
      assert.equal(parseStreamRecord(line), null, line);
  });

  it("says where a record is wrong", () => {
    const record = (body: Record<string, unknown>) => JSON.stringify({ schema: STREAM_SCHEMA, ...body });
    assert.match(
      refusal(record({ kind: "receipt", receipt: { ...accepted, status: "queued" } })),
      /^\/receipt\/status: .*must be one of "accepted", "duplicate", "rejected"/,
    );
    assert.match(
      refusal(record({ kind: "receipt", receipt: { ...accepted, status: "rejected" } })),
      /^\/receipt: .*required property "code"/,
    );
    assert.match(
      refusal(record({ kind: "receipt", receipt: { ...accepted, code: "x", reason: "y" } })),
      /^\/receipt\/code: .*must not be present here/,
    );
    assert.match(
      refusal(record({ kind: "event", event: event(1, { payload: undefined }) })),
      /^\/event: .*required property "payload"/,
    );
    assert.match(
      refusal(record({ kind: "event", event: event(2) })),
      /^\/event\/schema: unsupported_required_version: envelopeVersion=2/,
    );
    assert.match(refusal(record({ kind: "event" })), /^: .*required property "event"/);
  });
});
