import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ContractViolation,
  decode,
  decodeValue,
  encode,
  MAX_FRAME_BYTES,
  type Decoded,
} from "../../src/contract/index.js";
import { command, event, json, questionSet, result, terminal } from "./samples.js";

const rejected = (d: Decoded, code: string, path?: string) => {
  assert.equal(d.ok, false, `expected a rejection with ${code}`);
  if (d.ok) return;
  assert.equal(d.error.code, code, d.error.message);
  if (path !== undefined) assert.equal(d.error.path, path, d.error.message);
};

describe("decode: bad input is a typed error, never an exception", () => {
  it("refuses malformed, truncated and empty JSON", () => {
    rejected(decode("{not json"), "invalid_json");
    rejected(decode(json(event(1)).slice(0, -7)), "invalid_json");
    rejected(decode(""), "invalid_json");
    rejected(decode("   \n"), "invalid_json");
    rejected(decode(new Uint8Array()), "invalid_json");
  });

  it("refuses bytes that are not UTF-8", () => {
    const bytes = Buffer.concat([Buffer.from('{"schema":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    const d = decode(bytes);
    rejected(d, "invalid_json");
    assert.match(d.ok ? "" : d.error.message, /UTF-8/);
  });

  it("refuses a byte-order mark like any other stray character", () => {
    rejected(decode(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json(event(1)))])), "invalid_json");
  });

  it("refuses input over 1 MiB before parsing it, and accepts input at the limit", () => {
    const base = json(event(1, { payload: { text: "" } }));
    const pad = (total: number) => base.replace('"text":""', `"text":"${"x".repeat(total - base.length)}"`);
    rejected(decode(pad(MAX_FRAME_BYTES + 1)), "frame_too_large");
    rejected(decode(Buffer.from(pad(MAX_FRAME_BYTES + 1))), "frame_too_large");
    assert.equal(decode(pad(MAX_FRAME_BYTES)).ok, true);
    rejected(decode("[".repeat(MAX_FRAME_BYTES + 1)), "frame_too_large");
  });

  it("allows 64 levels of nesting and refuses 65, however deep the input", () => {
    const nested = (levels: number) =>
      json(event(1, { payload: JSON.parse(`${'{"a":'.repeat(levels - 2)}{}${"}".repeat(levels - 2)}`) }));
    assert.equal(decode(nested(64)).ok, true);
    rejected(decode(nested(65)), "invalid_json");
    rejected(decode("[".repeat(500_000) + "]".repeat(500_000), { maxBytes: 2_000_000 }), "invalid_json");
  });

  it("refuses JSON that is not an object with a discriminator", () => {
    for (const text of ["null", "42", '"event"', "[]", "{}", '{"schema":7}'])
      rejected(decode(text), "unsupported_required_schema");
  });
});

describe("decode: discriminators and required versions fail closed before the schema", () => {
  it("finds the kind and version from the schema discriminator", () => {
    for (const v of [1, 2, 3] as const) {
      const d = decode(json(event(v)));
      assert.ok(d.ok && d.kind === "event" && d.version === v);
      const c = decode(json(command(v)));
      assert.ok(c.ok && c.kind === "command" && c.version === v);
    }
  });

  it("refuses an unknown discriminator", () => {
    rejected(
      decode(json(command(1, { schema: "paperclip.prp.command.v4" }))),
      "unsupported_required_schema",
      "/schema",
    );
    rejected(decode(json({ ...event(1), schema: "paperclip.prp.evnt.v1" })), "unsupported_required_schema", "/schema");
  });

  it("refuses an event schemaVersion outside 1-3 with the documented text", () => {
    const d = decode(json(event(1, { schemaVersion: 4 })));
    rejected(d, "unsupported_required_version", "/schemaVersion");
    assert.equal(d.ok ? "" : d.error.message, "unsupported_required_version: schemaVersion=4; supported=1-3");
  });

  it("refuses a supported schemaVersion that does not match the envelope as a schema error", () => {
    rejected(decode(json(event(1, { schemaVersion: 2 }))), "schema_validation", "/schemaVersion");
  });

  it("refuses a document of another kind than the caller expects", () => {
    rejected(decode(json(command(1)), { kind: "event" }), "unsupported_required_schema", "/schema");
  });

  it("refuses receipts whose own schemaVersion is not 1", () => {
    const receipt = {
      schema: "paperclip.prp.stop_reason.v1",
      schemaVersion: 2,
      receiptId: "r",
      kind: "budget",
      code: "c",
      retryable: false,
    };
    rejected(
      decode(json(terminal({ stopReason: receipt }))),
      "unsupported_required_version",
      "/stopReason/schemaVersion",
    );
    rejected(decode(json(receipt)), "unsupported_required_version", "/schemaVersion");
    const st = { schema: "paperclip.prp.semantic_tool.v1", schemaVersion: 3 };
    rejected(
      decode(json(event(1, { eventType: "semantic_tool.input", priority: 1, payload: { semantic_tool: st } }))),
      "unsupported_required_version",
      "/payload/semantic_tool/schemaVersion",
    );
  });
});

describe("decode: schema validation", () => {
  it("keeps unknown optional fields of open objects unchanged", () => {
    const input = event(1, {
      futureEnvelopeField: { nested: [1, 2] },
      payload: { text: "x", futurePayloadField: true },
    });
    const d = decode(json(input));
    assert.ok(d.ok);
    assert.deepEqual(d.value, input);
    assert.equal(JSON.stringify(d.value), json(input));
  });

  it("refuses an extra property on a closed object, naming it", () => {
    const payload = {
      schema: "paperclip.auth.credentials.updated.v1",
      provider: "codex",
      bindingId: "harness-auth",
      revision: 1,
      detection: "credential_store",
      token: "secret",
    };
    const d = decode(json(event(1, { eventType: "auth.credentials.updated", priority: 0, payload })));
    rejected(d, "schema_validation", "/payload");
    assert.match(
      d.ok ? "" : d.error.message,
      /^schema_validation_failed: event v1 must be accepted: \/payload must not have the property "token"/,
    );
  });

  it("refuses an event type outside the version's closed enum", () => {
    rejected(
      decode(json(event(2, { eventType: "runner.backpressure", priority: 0 }))),
      "schema_validation",
      "/eventType",
    );
    rejected(decode(json(event(3, { eventType: "output.body.chunk" }))), "schema_validation", "/eventType");
    assert.equal(decode(json(event(1, { eventType: "runner.backpressure", priority: 0, payload: {} }))).ok, true);
  });

  it("refuses v2-only commands on v1 and v3-only commands on v2", () => {
    rejected(decode(json(command(1, { type: "session.goal.set", payload: {} }))), "schema_validation", "/type");
    rejected(
      decode(json(command(2, { type: "external_provider.operation", payload: {} }))),
      "schema_validation",
      "/type",
    );
  });

  it("binds run.terminal and run.result.proposed in every version", () => {
    for (const v of [1, 2, 3] as const) {
      const { runTerminalState: _, ...broken } = terminal();
      rejected(
        decode(json(event(v, { eventType: "run.terminal", priority: 0, payload: broken }))),
        "schema_validation",
        "/payload",
      );
      rejected(
        decode(
          json(
            event(v, {
              eventType: "run.result.proposed",
              priority: 0,
              payload: result({ reportedWorkDisposition: "blocked" }),
            }),
          ),
        ),
        "schema_validation",
        "/payload",
      );
      assert.equal(decode(json(event(v, { eventType: "run.terminal", priority: 0, payload: terminal() }))).ok, true);
    }
  });

  it("checks the date-time form", () => {
    rejected(decode(json(event(1, { emittedAt: "2026-08-07T12:00:00+01:00" }))), "schema_validation", "/emittedAt");
    rejected(decode(json(event(1, { emittedAt: "2026-13-07T12:00:00Z" }))), "schema_validation", "/emittedAt");
    assert.equal(decode(json(event(1, { emittedAt: "2026-08-07T12:00:00Z" }))).ok, true);
  });

  it("refuses a controllerSeq that JSON cannot carry exactly", () => {
    rejected(
      decode(json(command(1)).replace('"controllerSeq":1', '"controllerSeq":9007199254740993')),
      "schema_validation",
      "/controllerSeq",
    );
    assert.equal(decode(json(command(1, { controllerSeq: 9007199254740991 }))).ok, true);
  });

  it("counts runtime activity keys in code points and refuses lone surrogates", () => {
    const activity = (activityKey: string) =>
      json(
        event(1, { eventType: "runtime.activity.recorded", priority: 1, payload: { namespace: "ns", activityKey } }),
      );
    assert.equal(decode(activity("😀".repeat(160))).ok, true);
    rejected(decode(activity("😀".repeat(161))), "schema_validation", "/payload/activityKey");
    rejected(decode(activity("a\u0007b")), "schema_validation", "/payload/activityKey");
    rejected(decode(activity("a\ud800b")), "schema_validation", "/payload/activityKey");
  });

  it("needs an explicit kind for documents without a discriminator", () => {
    const usage = {
      provider: "codex",
      model: null,
      cumulative: {
        inputTokens: 1,
        outputTokens: 1,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        activeSeconds: 1,
        requests: 1,
        providerCostUsd: null,
      },
      runDelta: null,
    };
    rejected(decode(json(usage)), "unsupported_required_schema");
    assert.equal(decode(json(usage), { kind: "usage" }).ok, true);
    rejected(decode(json({ ...usage, extra: 1 }), { kind: "usage" }), "schema_validation");
  });
});

describe("decode: rules beyond the schema", () => {
  it("requires exactly one recommended option and distinct labels on a decision question", () => {
    assert.equal(decode(json(questionSet())).ok, true);
    const set = questionSet() as { questions: Array<{ options?: Array<Record<string, unknown>> }> };
    set.questions[0]!.options![1]!.recommended = true;
    rejected(decode(json(set)), "schema_validation", "/questions/0/options");
    const labels = questionSet() as { questions: Array<{ options?: Array<Record<string, unknown>> }> };
    labels.questions[0]!.options![1]!.label = "Approach A";
    rejected(decode(json(labels)), "schema_validation", "/questions/0/options");
  });

  it("accepts a not_run check without reasonCode and warns about it (wire.md O8)", () => {
    const d = decode(json(result({ verification: [{ commandOrCheck: "npm test", status: "not_run" }] })));
    assert.ok(d.ok);
    assert.deepEqual(
      d.warnings.map((w) => [w.code, w.path]),
      [["not_run_without_reason", "/verification/0"]],
    );
  });
});

describe("decodeValue and encode", () => {
  it("decodes a parsed value the same way", () => {
    assert.equal(decodeValue(event(3)).ok, true);
    rejected(decodeValue(event(3, { priority: 3 })), "schema_validation", "/priority");
  });

  it("encode serialises a valid document and throws ContractViolation on an invalid one", () => {
    assert.equal(encode(event(1) as never, "event"), json(event(1)));
    assert.throws(
      () => encode(event(1, { sourceSeq: 0 }) as never, "event"),
      (err: unknown) => err instanceof ContractViolation && err.error.path === "/sourceSeq",
    );
  });
});
