import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalForm } from "../../src/contract/canonical-json.js";
import { cutNoted, cutText, cutTextMarked, cutUtf8 } from "../../src/contract/text-cut.js";

const EMOJI = "😀"; // two UTF-16 units, four UTF-8 bytes

describe("text is cut on code point boundaries, never inside a surrogate pair", () => {
  const UNITS: Array<[string, number, string]> = [
    ["abc", 5, "abc"],
    ["abc", 3, "abc"],
    ["abcd", 3, "abc"],
    [`ab${EMOJI}`, 3, "ab"], // the 3rd unit is the high half: the pair goes whole
    [`ab${EMOJI}`, 4, `ab${EMOJI}`],
    [`ab${EMOJI}c`, 4, `ab${EMOJI}`],
    [`${EMOJI}${EMOJI}`, 1, ""],
    [`${EMOJI}${EMOJI}`, 3, EMOJI],
    ["abc", 0, ""],
    ["", 4, ""],
  ];
  for (const [text, max, want] of UNITS) {
    it(`cutText(${JSON.stringify(text)}, ${max}) → ${JSON.stringify(want)}`, () => {
      const got = cutText(text, max);
      assert.equal(got, want);
      assert.ok(got.length <= max, "within the limit");
      assert.ok(got.isWellFormed(), "no lone surrogate");
    });
  }

  it("the slice it replaces leaves a lone surrogate canonical JSON refuses; the cut does not", () => {
    const text = `${"x".repeat(3999)}${EMOJI}`;
    assert.equal(canonicalForm({ t: text.slice(0, 4000) }).ok, false, "the old cut breaks the event");
    assert.equal(canonicalForm({ t: cutText(text, 4000) }).ok, true);
  });

  it("cutTextMarked appends … only when it cut", () => {
    assert.equal(cutTextMarked("abc", 3), "abc");
    assert.equal(cutTextMarked(`ab${EMOJI}`, 3), "ab…");
  });

  const BYTES: Array<[string, number, string]> = [
    ["aé", 2, "a"],
    ["aé", 3, "aé"],
    [`${EMOJI}b`, 3, ""],
    [`${EMOJI}b`, 4, EMOJI],
    [`a${EMOJI}`, 4, "a"],
  ];
  for (const [text, max, want] of BYTES) {
    it(`cutUtf8(${JSON.stringify(text)}, ${max}) → ${JSON.stringify(want)}`, () => {
      const got = cutUtf8(text, max);
      assert.equal(got, want);
      assert.ok(Buffer.byteLength(got) <= max);
    });
  }
});

describe("cutNoted: text for a log, bounded in bytes, saying what it dropped", () => {
  it("keeps text within the bound as it is, and cuts longer text on a character boundary with the count of bytes cut", () => {
    assert.equal(cutNoted("abc", 3), "abc");
    assert.equal(cutNoted("abcdef", 4), "abcd…(2 bytes cut)");
    // The emoji's four bytes do not fit in the two left: it goes whole, and the count says so.
    assert.equal(cutNoted(`ab${EMOJI}cd`, 4), "ab…(6 bytes cut)");
    const big = cutNoted("n".repeat(500_000), 200);
    assert.equal(big, `${"n".repeat(200)}…(499800 bytes cut)`);
  });
});
