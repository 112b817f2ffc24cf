import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalJson, canonicalDigest, ContractViolation } from "../../src/contract/index.js";

const fromBits = (hex: string): number => {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
};

describe("canonical JSON (RFC 8785)", () => {
  it("reproduces the RFC's §3.2.2 example", () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    );
    assert.equal(
      canonicalJson(input),
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts keys by UTF-16 code units as in the RFC's §3.2.3 example", () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    );
    // Read the keys from the text: an object would list the integer-like key "1" first.
    const keys = [...canonicalJson(input).matchAll(/"((?:[^"\\]|\\.)*)":/g)].map((m) => JSON.parse(`"${m[1]}"`));
    assert.deepEqual(keys, ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"]);
  });

  it("serialises the numbers of the RFC's Appendix B", () => {
    const cases: Array<[string, string]> = [
      ["0000000000000000", "0"],
      ["8000000000000000", "0"],
      ["0000000000000001", "5e-324"],
      ["8000000000000001", "-5e-324"],
      ["7fefffffffffffff", "1.7976931348623157e+308"],
      ["ffefffffffffffff", "-1.7976931348623157e+308"],
      ["4340000000000000", "9007199254740992"],
      ["c340000000000000", "-9007199254740992"],
      ["4430000000000000", "295147905179352830000"],
      ["44b52d02c7e14af5", "9.999999999999997e+22"],
      ["44b52d02c7e14af6", "1e+23"],
      ["44b52d02c7e14af7", "1.0000000000000001e+23"],
      ["444b1ae4d6e2ef4e", "999999999999999700000"],
      ["444b1ae4d6e2ef4f", "999999999999999900000"],
      ["444b1ae4d6e2ef50", "1e+21"],
      ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
      ["3eb0c6f7a0b5ed8d", "0.000001"],
      ["41b3de4355555553", "333333333.3333332"],
      ["41b3de4355555554", "333333333.33333325"],
      ["41b3de4355555555", "333333333.3333333"],
      ["41b3de4355555556", "333333333.3333334"],
      ["41b3de4355555557", "333333333.33333343"],
      ["becbf647612f3696", "-0.0000033333333333333333"],
      ["43143ff3c1cb0959", "1424953923781206.2"],
    ];
    for (const [bits, expected] of cases) assert.equal(canonicalJson(fromBits(bits)), expected, bits);
  });

  it("keeps array order and drops whitespace", () => {
    assert.equal(canonicalJson({ b: [3, 1, 2], a: { d: 1, c: "x" } }), '{"a":{"c":"x","d":1},"b":[3,1,2]}');
  });

  const refuses = (value: unknown, fragment: RegExp) =>
    assert.throws(
      () => canonicalJson(value),
      (err: unknown) => err instanceof ContractViolation && fragment.test(err.message),
    );

  it("refuses non-finite numbers, cycles, sparse arrays, non-plain objects and lone surrogates", () => {
    refuses(Number.NaN, /not finite/);
    refuses({ a: Number.POSITIVE_INFINITY }, /not finite/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    refuses(cyclic, /cycle/);
    refuses([1, , 3], /sparse/); // eslint-disable-line no-sparse-arrays
    refuses({ when: new Date(0) }, /plain object/);
    refuses({ s: "\ud800" }, /lone surrogate/);
    refuses({ f: () => 1 }, /not JSON data/);
    refuses(10n, /not JSON data/);
  });

  it("allows 64 levels of nesting and refuses 65", () => {
    const nest = (n: number): unknown => (n === 0 ? 1 : [nest(n - 1)]);
    assert.equal(canonicalJson(nest(64)).length, 64 * 2 + 1);
    refuses(nest(65), /deeper than 64/);
  });

  it("allows 10,000 values and refuses 10,001", () => {
    assert.doesNotThrow(() => canonicalJson(new Array(9_999).fill(0)));
    refuses(new Array(10_000).fill(0), /more than 10000 values/);
  });

  it("gives equal digests to equal values in any key order", () => {
    assert.equal(canonicalDigest({ a: 1, b: [true] }), canonicalDigest({ b: [true], a: 1 }));
    assert.match(canonicalDigest({}), /^sha256:[a-f0-9]{64}$/);
    assert.equal(canonicalDigest({}), "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  });
});
