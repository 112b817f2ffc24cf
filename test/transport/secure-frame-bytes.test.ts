import assert from "node:assert/strict";
import { createDecipheriv, randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import fc from "fast-check";
import { canonicalFrame, frameAad, frameNonce, GCM_TAG_BYTES } from "../../src/transport/secure-frame.js";
import { Opener, Sealer, type Result } from "../../src/transport/index.js";
import { seeded } from "../support/seed.js";

/**
 * A socket hands the opener a frame's bytes, which it reads in one pass when they are in the
 * layout every sealer writes. The general path (the same frame as text, through JSON) is the
 * reference: whatever the bytes, both must give the same plaintext or the same refusal.
 */
const SESSION = `sha256:${"22".repeat(32)}`;
const KEY = randomBytes(32);
const opener = () => new Opener(Buffer.from(KEY), SESSION, "client_to_core");
const outcome = (r: Result<string>): string => (r.ok ? `ok ${r.value}` : `${r.error.code} ${r.error.path}`);
const viaText = (frame: string): string => outcome(opener().open(frame));
const viaBytes = (frame: string): string => outcome(opener().open(Buffer.from(frame, "utf8")));

/** Frames 0..count-1 of one sealer, as text. */
function sealed(count: number, plaintext = '{"kind":"lease_renew"}'): string[] {
  const sealer = new Sealer(Buffer.from(KEY), SESSION, "client_to_core");
  return Array.from({ length: count }, (_, i) => {
    const frame = sealer.seal(`${plaintext}${i}`);
    assert.ok(frame.ok);
    return frame.value;
  });
}

describe("secure frames read from bytes", () => {
  it("seal the same bytes as text, in the layout the one-pass reader takes", () => {
    const key = randomBytes(32);
    const asText = new Sealer(Buffer.from(key), SESSION, "core_to_client");
    const asBytes = new Sealer(Buffer.from(key), SESSION, "core_to_client");
    for (const plaintext of ["", "x", "é".repeat(300)]) {
      const text = asText.seal(plaintext);
      const bytes = asBytes.sealFrame(plaintext);
      assert.ok(text.ok && bytes.ok);
      assert.equal(bytes.value.toString("utf8"), text.value);
      const { schema, counter, ciphertext } = JSON.parse(text.value) as Record<string, unknown>;
      assert.equal(text.value, JSON.stringify({ schema, counter, ciphertext }));
      const read = canonicalFrame(bytes.value);
      assert.ok(read, "a sealer's own frame takes the one-pass reader");
      assert.equal(read.counter, counter);
      assert.equal(read.sealed.toString("hex"), ciphertext);
    }
  });

  it("lay the counter into the nonce as u64 big-endian, past 2^32 too", () => {
    for (const counter of [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER]) {
      const expected = Buffer.alloc(12);
      expected.write("P3S1", 0, "ascii");
      expected.writeBigUInt64BE(BigInt(counter), 4);
      assert.equal(frameNonce("core_to_client", counter).toString("hex"), expected.toString("hex"), String(counter));
    }
  });

  it("bind each of one sealer's frames to its own counter, as the nonce and AAD rewritten in place", () => {
    // 0..1000 crosses from one to four digits: a stale digit or byte left from the frame
    // before would make the tag differ from one computed with fresh inputs.
    for (const [i, frame] of sealed(1001).entries()) {
      const { counter, sealed: bytes } = canonicalFrame(Buffer.from(frame, "latin1"))!;
      assert.equal(counter, i);
      const decipher = createDecipheriv("aes-256-gcm", KEY, frameNonce("client_to_core", i));
      decipher.setAAD(frameAad(SESSION, "client_to_core", i));
      decipher.setAuthTag(bytes.subarray(bytes.length - GCM_TAG_BYTES));
      const plaintext = Buffer.concat([decipher.update(bytes.subarray(0, -GCM_TAG_BYTES)), decipher.final()]);
      assert.equal(plaintext.toString("utf8"), `{"kind":"lease_renew"}${i}`);
    }
    const reader = opener();
    for (const [i, frame] of sealed(1001).entries())
      assert.equal(outcome(reader.open(Buffer.from(frame, "latin1"))), `ok {"kind":"lease_renew"}${i}`);
  });

  it("seal plaintexts of every size, each from its own bytes, the shorter after the longer", () => {
    // Sizes around the 16 KiB the sealer encodes into a buffer it reuses, in multi-byte text:
    // a frame that read a byte left by the one before would open to a different plaintext.
    const sealer = new Sealer(Buffer.from(KEY), SESSION, "client_to_core");
    const reader = opener();
    for (const bytes of [16_384, 2, 16_385, 16_383, 40_000, 0, 16_384, 7]) {
      const plaintext = "é".repeat(Math.floor(bytes / 2)) + "x".repeat(bytes % 2);
      assert.equal(Buffer.byteLength(plaintext), bytes);
      const frame = sealer.sealFrame(plaintext);
      assert.ok(frame.ok);
      assert.equal(outcome(reader.open(frame.value)), `ok ${plaintext}`, `${bytes} bytes`);
    }
  });

  it("open every layout and every fault as the text path does", () => {
    const [frame] = sealed(1) as [string];
    const hex = (JSON.parse(frame) as { ciphertext: string }).ciphertext;
    const cases: Array<[string, string]> = [
      ["as sealed", frame],
      [
        "members reordered",
        JSON.stringify({ ciphertext: hex, counter: 0, schema: "paperclip.runner.secure-frame.v1" }),
      ],
      ["spaces", frame.replace('"counter":0', '"counter" : 0')],
      ["trailing space", `${frame} `],
      ["counter 0e0", frame.replace('"counter":0', '"counter":0e0')],
      ["counter 00", frame.replace('"counter":0', '"counter":00')],
      ["counter 2^53", frame.replace('"counter":0', '"counter":9007199254740992')],
      ["counter 17 digits", frame.replace('"counter":0', '"counter":10000000000000000')],
      ["counter -0", frame.replace('"counter":0', '"counter":-0')],
      ["upper-case hex", frame.replace(hex, hex.toUpperCase())],
      ["odd hex", frame.replace(hex, `${hex}0`)],
      ["short hex", frame.replace(hex, hex.slice(0, 30))],
      ["escaped hex digit", frame.replace(hex, `\\u00${hex.charCodeAt(0).toString(16)}${hex.slice(1)}`)],
      ["a quote inside the hex", frame.replace(hex, `${hex.slice(0, 10)}"${hex.slice(11)}`)],
      ["a member repeated", frame.replace('{"schema"', `{"ciphertext":"${hex}","schema"`)],
      ["an extra member", frame.replace('"}', '","extra":1}')],
      ["trailing bytes", `${frame}{}`],
      ["tag flipped", frame.replace(hex, `${hex.slice(0, -1)}${hex.endsWith("0") ? "1" : "0"}`)],
      ["truncated", frame.slice(0, -1)],
      ["no schema", frame.replace('"schema":"paperclip.runner.secure-frame.v1",', "")],
    ];
    for (const [name, text] of cases) assert.equal(viaBytes(text), viaText(text), name);
    assert.equal(viaBytes(frame), viaText(frame));
    assert.match(viaBytes(frame), /^ok /);
    assert.equal(viaBytes(cases[4]![1]).split(" ")[0], "ok", "0e0 is the number 0 to JSON, so both open it");
    assert.equal(viaBytes(cases[9]![1]).split(" ")[0], "malformed_frame");
  });

  it("give the text path's answer for any byte inserted, replaced or removed (property)", () => {
    const frames = sealed(3);
    const interesting = [...'"\\0123456789abcdefABCDEF ,:{}[]-+.e'].map((c) => c.charCodeAt(0));
    const edit = fc.record({
      frame: fc.integer({ min: 0, max: frames.length - 1 }),
      at: fc.nat(),
      op: fc.constantFrom("insert", "replace", "remove"),
      byte: fc.oneof(fc.constantFrom(...interesting), fc.integer({ min: 0x20, max: 0x7e })),
    });
    fc.assert(
      fc.property(fc.array(edit, { minLength: 0, maxLength: 3 }), (edits) => {
        let text = frames[edits[0]?.frame ?? 0]!;
        for (const { at, op, byte } of edits) {
          const i = at % (text.length + 1);
          const c = String.fromCharCode(byte);
          text =
            op === "insert"
              ? text.slice(0, i) + c + text.slice(i)
              : op === "replace"
                ? text.slice(0, i) + c + text.slice(i + 1)
                : text.slice(0, i) + text.slice(i + 1);
        }
        assert.equal(viaBytes(text), viaText(text), text);
      }),
      seeded("a frame's bytes open as its text does", 3000),
    );
  });
});
