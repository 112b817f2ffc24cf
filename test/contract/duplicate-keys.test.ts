import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { decode } from "../../src/contract/index.js";
import { parseJson } from "../../src/contract/json-input.js";
import { parseFrameText } from "../../src/transport/envelope.js";
import { event, json } from "./samples.js";
import { seeded } from "../support/seed.js";

const refused = (text: string, path: string, fragment: RegExp) => {
  const parsed = parseJson(text);
  assert.equal(parsed.ok, false, `${text} is refused`);
  if (parsed.ok) return;
  assert.equal(parsed.error.code, "invalid_json", parsed.error.message);
  assert.equal(parsed.error.path, path, parsed.error.message);
  assert.match(parsed.error.message, fragment);
};

/** Strings that look like JSON syntax from the inside: quotes, escapes, colons, braces. */
const tricky = fc.string({
  unit: fc.constantFrom("a", "b", '"', "\\", ":", ",", "{", "}", "[", "]", " ", "\u00e9", "\ud83d\ude00", "\n"),
  maxLength: 8,
});
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    tricky,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    tie("object"),
    fc.array(tie("value"), { maxLength: 4 }),
  ),
  object: fc.dictionary(
    tricky.filter((k) => k !== "__proto__"),
    tie("value"),
    { maxKeys: 4, noNullPrototype: true },
  ),
})).value;
/** JSON text of a value, with random whitespace where the grammar allows it. */
const spaced = (value: unknown, pad: string): string =>
  JSON.stringify(value, null, pad).replace(/\n/g, pad.includes("\t") ? "\r\n" : "\n");

describe("duplicate member names and __proto__ (I-JSON, RFC 7493 §2.3): refused with invalid_json", () => {
  it("refuses a repeated name, naming the object that holds it", () => {
    refused('{"a":1,"a":2}', "", /duplicate member name "a"/);
    refused('{"x":{"b":[1,{"c":1,"d":2,"c":3}]}}', "/x/b/1", /duplicate member name "c"/);
    refused('[0,{"k":1},{"k":1,"k":1}]', "/2", /"k"/);
    refused('{"a/b~":{"n":1, "n" :2}}', "/a~1b~0", /"n"/);
  });

  it("compares names after their escapes are read, as every parser does", () => {
    refused('{"a":1,"\\u0061":2}', "", /duplicate member name "a"/);
    refused('{"\\ud83d\\ude00":1,"\ud83d\ude00":2}', "", /duplicate/);
  });

  it("refuses a member named __proto__, however it is spelled", () => {
    refused('{"__proto__":{"polluted":true}}', "", /__proto__/);
    refused('{"payload":{"\\u005f_proto__":1}}', "/payload", /__proto__/);
  });

  it("accepts the same name in different objects, and names that only look alike", () => {
    for (const text of [
      '{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}',
      '{"a":1,"A":2,"a ":3}',
      '{"k":"\\"k\\":","k\\"":1}',
      '["a","a"]',
      '{"__proto":1,"proto__":2}',
    ]) {
      assert.equal(parseJson(text).ok, true, text);
    }
  });

  it("accepts every JSON text without a repeated name, however its strings look (seeded)", () => {
    fc.assert(
      fc.property(jsonValue, fc.constantFrom("", " ", "\t", "  "), (value, pad) => {
        const parsed = parseJson(spaced(value, pad), Number.POSITIVE_INFINITY);
        assert.equal(parsed.ok, true, parsed.ok ? "" : parsed.error.message);
        if (parsed.ok) assert.deepEqual(parsed.value, value);
      }),
      seeded("duplicate keys accepted", 400),
    );
  });

  it("refuses every JSON text with one repeated name, wherever it is (seeded)", () => {
    const withName = fc.tuple(
      jsonValue,
      tricky.filter((k) => k !== "__proto__"),
      jsonValue,
      fc.constantFrom("", " ", "\n"),
    );
    fc.assert(
      fc.property(
        withName,
        fc.array(fc.constantFrom("array", "object"), { maxLength: 3 }),
        ([value, name, other, pad], wrappers) => {
          // {name: value, ...} written with `name` twice, then nested in arrays and objects.
          const inner = `{${JSON.stringify(name)}:${JSON.stringify(value)},${pad}${JSON.stringify(name)}${pad}:${JSON.stringify(other)}}`;
          let text = inner;
          let path = "";
          for (const w of wrappers) {
            text = w === "array" ? `[1,${text}]` : `{"w":${text}}`;
            path = (w === "array" ? "/1" : "/w") + path;
          }
          const parsed = parseJson(text, Number.POSITIVE_INFINITY);
          assert.equal(parsed.ok, false, text);
          if (!parsed.ok) {
            assert.equal(parsed.error.code, "invalid_json");
            assert.equal(parsed.error.path, path, parsed.error.message);
          }
        },
      ),
      seeded("duplicate keys refused", 400),
    );
  });

  it("applies to every reader of the codec: decode, and the transport's frames", () => {
    const text = json(event(1));
    const doubled = `${text.slice(0, -1)},"runId":"run_other"}`;
    assert.equal(decode(text).ok, true);
    const decoded = decode(doubled);
    assert.equal(decoded.ok, false);
    if (!decoded.ok) assert.equal(decoded.error.code, "invalid_json");
    const frame = parseFrameText(doubled);
    assert.equal(frame.ok, false);
    if (!frame.ok) assert.equal(frame.error.code, "invalid_json");
  });
});
