import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readEventStream } from "../../src/reducer/index.js";
import { event, json } from "../contract/samples.js";

const bytes = (text: string) => new TextEncoder().encode(text);
const line = (seq: number, overrides: Record<string, unknown> = {}) =>
  json(event(1, { sourceEventId: `event_${seq}`, sourceSeq: seq, ...overrides }));

describe("NDJSON event streams", () => {
  it("reads one event per line, LF or CRLF, skipping blank lines", () => {
    const read = readEventStream(bytes(`${line(1)}\r\n\n  \n${line(2)}\n${line(1)}`));
    assert.ok(read.ok);
    assert.deepEqual(
      read.events.map((e) => e.sourceEventId),
      ["event_1", "event_2", "event_1"],
    );
    assert.deepEqual(readEventStream(bytes("")), { ok: true, events: [] });
  });

  it("refuses the first bad line with the codec's typed error and its line number", () => {
    assert.deepEqual(readEventStream(bytes(`${line(1)}\n\n{"schema":`)), {
      ok: false,
      error: { code: "invalid_json", path: "", message: "input is not JSON: Unexpected end of JSON input", line: 3 },
    });
    const invalid = readEventStream(bytes(`${line(1)}\n${line(2, { sourceSeq: 0 })}`));
    assert.ok(!invalid.ok);
    assert.deepEqual(
      [invalid.error.code, invalid.error.path, invalid.error.line],
      ["schema_validation", "/sourceSeq", 2],
    );
    const command = readEventStream(bytes(json({ schema: "paperclip.prp.command.v1" })));
    assert.ok(!command.ok);
    assert.equal(command.error.code, "unsupported_required_schema");
    const utf8 = readEventStream(new Uint8Array([...bytes(`${line(1)}\n`), 0xff, 0x0a]));
    assert.ok(!utf8.ok);
    assert.deepEqual([utf8.error.code, utf8.error.line], ["invalid_json", 2]);
  });

  it("holds a stream to one run and one session, and a repeated id to the same canonical bytes", () => {
    const cases: Array<[string, string, string]> = [
      [`${line(1)}\n${line(2, { runId: "run_other" })}`, "/runId", "is not the stream's run"],
      [
        `${line(1)}\n${line(2, { normalizedSessionId: "session_other" })}`,
        "/normalizedSessionId",
        "is not the stream's session",
      ],
      [`${line(1)}\n${line(1, { payload: { text: "changed" } })}`, "", "repeated with different content"],
    ];
    for (const [text, path, message] of cases) {
      const read = readEventStream(bytes(text));
      assert.ok(!read.ok, text);
      assert.deepEqual([read.error.code, read.error.path, read.error.line], ["binding_mismatch", path, 2]);
      assert.match(read.error.message, new RegExp(message));
    }
    const reordered = JSON.stringify(
      Object.fromEntries(Object.entries(event(1, { sourceEventId: "event_1" })).reverse()),
    );
    assert.ok(readEventStream(bytes(`${line(1)}\n${reordered}`)).ok, "key order is not content");
  });
});
