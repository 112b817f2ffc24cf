import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { jsonLogger } from "../../src/cli/json-log.js";
import { printableJson, visible, visibleLines } from "../../src/cli/terminal-text.js";

/** Every character a terminal acts on: C0, DEL, C1, the bidi controls and the line separators. */
const CONTROLS = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  ...Array.from({ length: 0x21 }, (_, i) => 0x7f + i),
  0x061c,
  0x200e,
  0x200f,
  0x2028,
  0x2029,
  0x202a,
  0x202b,
  0x202c,
  0x202d,
  0x202e,
  0x2066,
  0x2067,
  0x2068,
  0x2069,
].map((c) => String.fromCharCode(c));
const RAW = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

describe("terminal text", () => {
  it("visible: every control shown as an escape, printable text (backslashes, accents, emoji) untouched", () => {
    for (const c of CONTROLS)
      assert.equal(RAW.test(visible(`a${c}b`)), false, `U+${c.charCodeAt(0).toString(16)} stays raw`);
    assert.equal(visible("\x1b]0;t\x07\u202e"), "\\x1b]0;t\\x07\\u202e");
    assert.equal(visible("a\\x1b é 🙂"), "a\\x1b é 🙂");
    assert.equal(visible(visible("\x1b")), visible("\x1b"), "idempotent");
  });

  it("visibleLines keeps the newline and the tab, and nothing else", () => {
    assert.equal(visibleLines("a\n\tb\r\x1b[2K"), "a\n\tb\\x0d\\x1b[2K");
  });

  it("printableJson escapes what JSON.stringify leaves raw, and the value is the same", () => {
    const value = { text: CONTROLS.join(""), nested: ["\u009b31m", "\u202e"] };
    const json = printableJson(JSON.stringify(value, null, 2));
    assert.equal(RAW.test(json.replace(/\n/g, "")), false, "no raw control outside the layout's newlines");
    assert.deepEqual(JSON.parse(json), value);
  });

  it("the daemon's JSON log holds no raw control character", () => {
    const lines: string[] = [];
    jsonLogger(
      (line) => lines.push(line),
      () => new Date(0),
    )({ level: "warn", event: "runner.refused", message: "name \u009b31m\u202e\x7f" });
    assert.equal(lines.length, 1);
    assert.equal(RAW.test(lines[0]!.slice(0, -1)), false, lines[0]);
    assert.equal((JSON.parse(lines[0]!) as { message: string }).message, "name \u009b31m\u202e\x7f");
  });
});
