import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { BoundedLineReader, type LineEvent } from "../../src/harness/line-reader.js";
import { seeded } from "../support/seed.js";

const read = (limit: number, chunks: Array<string | Buffer>): LineEvent[] => {
  const r = new BoundedLineReader(limit);
  return [...chunks.flatMap((c) => r.push(Buffer.isBuffer(c) ? c : Buffer.from(c))), ...r.end()];
};

describe("bounded line reader", () => {
  it("splits lines, strips one trailing CR and yields a last line without newline", () => {
    assert.deepEqual(read(100, ["a\r\nb\nc"]), [
      { kind: "line", text: "a" },
      { kind: "line", text: "b" },
      { kind: "line", text: "c" },
    ]);
    assert.deepEqual(read(100, ["\n"]), [{ kind: "line", text: "" }]);
  });

  it("accepts a line of exactly the limit and refuses one byte more, then keeps reading", () => {
    assert.deepEqual(read(4, ["abcd\n"]), [{ kind: "line", text: "abcd" }]);
    assert.deepEqual(read(4, ["abcd\r\n"]), [{ kind: "line", text: "abcd" }]);
    assert.deepEqual(read(4, ["abcde\nok\n"]), [
      { kind: "oversize", bytes: 5 },
      { kind: "line", text: "ok" },
    ]);
  });

  it("counts bytes, not characters", () => {
    assert.deepEqual(read(4, ["éé\n"]), [{ kind: "line", text: "éé" }]);
    assert.deepEqual(read(4, ["ééé\n"]), [{ kind: "overlong" }, { kind: "oversize", bytes: 6 }]);
  });

  it("drains a huge line without keeping it: says so as soon as it passes the limit, then reports its full length", () => {
    const r = new BoundedLineReader(10);
    const big = Buffer.alloc(1_000_000, 0x78);
    assert.deepEqual(r.push(Buffer.from("0123456789")), []);
    assert.deepEqual(
      r.push(big),
      [{ kind: "overlong" }],
      "a line that never ends is noticed at the limit, not at its newline",
    );
    assert.deepEqual(r.push(big), []);
    assert.deepEqual(r.push(Buffer.from("\nnext\n")), [
      { kind: "oversize", bytes: 2_000_010 },
      { kind: "line", text: "next" },
    ]);
  });

  it("gives the same lines however the bytes are chunked", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 12 }), { maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 20 }),
        (lines, cuts) => {
          const bytes = Buffer.from(lines.map((l) => `${l.replace(/[\r\n]/g, "")}\n`).join(""));
          const chunks: Buffer[] = [];
          for (let at = 0, i = 0; at < bytes.length; i++) {
            const next = Math.min(bytes.length, at + cuts[i % cuts.length]!);
            chunks.push(bytes.subarray(at, next));
            at = next;
          }
          assert.deepEqual(read(10, chunks), read(10, [bytes]));
        },
      ),
      seeded("gives the same lines however the bytes are chunked"),
    );
  });
});
