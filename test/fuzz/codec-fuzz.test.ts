import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { canonicalJson } from "../../src/contract/canonical-json.js";
import { decode, decodeValue, type Decoded } from "../../src/contract/decode.js";
import type { ContractErrorCode } from "../../src/contract/errors.js";
import { FUZZ_SEED, fuzz, fuzzParameters, mutatedText, mutatedValue, randomBytes, validDocuments } from "./support.js";

const CODES = new Set<ContractErrorCode>(["invalid_json", "schema_validation", "unsupported_required_version", "unsupported_required_schema", "binding_mismatch", "frame_too_large"]);

/**
 * The codec's promise, as one oracle: decoding never throws; a refusal is a typed error with a
 * known code and a message; an accepted document has a canonical form and decodes again, from
 * its own serialisation, to the same value. Returns what broke, or null.
 */
export function codecBreach(decodeInput: (input: string | Uint8Array) => Decoded, input: string | Uint8Array): string | null {
  let decoded: Decoded;
  try {
    decoded = decodeInput(input);
  } catch (err) {
    return `decode threw: ${(err as Error).message}`;
  }
  if (!decoded.ok) {
    if (!CODES.has(decoded.error.code)) return `unknown refusal code ${decoded.error.code}`;
    return typeof decoded.error.message === "string" && decoded.error.message.length > 0 ? null : "a refusal without a message";
  }
  let canonical: string;
  try {
    canonical = canonicalJson(decoded.value);
  } catch (err) {
    return `accepted, but has no canonical form: ${(err as Error).message}`;
  }
  const again = decode(canonical);
  if (!again.ok) return `accepted, but its canonical form is refused: ${again.error.code} ${again.error.message}`;
  return canonicalJson(again.value) === canonical ? null : "accepted, but its canonical form decodes to another value";
}

const { commands, events } = validDocuments();
const documents = [...commands, ...events];
const real = (input: string | Uint8Array) => decode(input);
const holds = (input: string | Uint8Array) => {
  const breach = codecBreach(real, input);
  if (breach) throw new Error(breach);
};

describe(`codec fuzz (seed ${FUZZ_SEED})`, () => {
  it("the corpus is the fixtures' valid commands and events, each accepted", () => {
    assert.ok(commands.length >= 10 && events.length >= 50, `${commands.length} commands, ${events.length} events`);
    for (const doc of documents) assert.equal(codecBreach(real, JSON.stringify(doc)), null);
  });

  it("random bytes: refused with a typed error or accepted with a canonical form, never a throw", async () => {
    await fuzz("codec bytes", fc.property(randomBytes, holds), 3000, 20_000);
  });

  it("random JSON values and texts", async () => {
    await fuzz("codec json", fc.property(fc.json({ maxDepth: 4 }), holds), 2000, 20_000);
    await fuzz("codec values", fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
      try {
        decodeValue(value);
      } catch (err) {
        throw new Error(`decodeValue threw: ${(err as Error).message}`);
      }
    }), 2000, 20_000);
  });

  it("valid commands and events with one value changed, removed or added", async () => {
    const mutated = fc.constantFrom(...documents).chain((doc) => mutatedValue(doc));
    await fuzz("codec mutated values", fc.property(mutated, (value) => holds(JSON.stringify(value))), 3000, 30_000);
  });

  it("valid commands and events as text, cut, with a byte changed, a key repeated or __proto__ added", async () => {
    const mutated = fc.constantFrom(...documents).chain((doc) => mutatedText(doc));
    await fuzz("codec mutated text", fc.property(mutated, holds), 3000, 30_000);
  });

  it("a repeated key or a __proto__ key is refused as invalid_json, wherever it sits", async () => {
    const doubled = fc.constantFrom(...documents).chain((doc) =>
      fc.constantFrom(...Object.keys(doc)).map((key) => `{${JSON.stringify(key)}:${JSON.stringify(doc[key])},${JSON.stringify(doc).slice(1)}`),
    );
    await fuzz("codec repeated keys", fc.property(doubled, (text) => {
      const decoded = decode(text);
      assert.equal(decoded.ok ? "accepted" : decoded.error.code, "invalid_json");
    }), 300, 10_000);
    for (const doc of documents.slice(0, 20)) {
      const decoded = decode(`{"__proto__":{"x":1},${JSON.stringify(doc).slice(1)}`);
      assert.equal(decoded.ok ? "accepted" : decoded.error.code, "invalid_json");
    }
  });

  it("the oracle fails on a decoder that throws, one that accepts what has no canonical form or what the real codec refuses, and a refusal without a message", () => {
    const mutated = fc.constantFrom(...documents).chain((doc) => mutatedText(doc));
    const throwing = (input: string | Uint8Array) => {
      if (String(input).includes("\ud800") || String(input).length % 7 === 0) throw new Error("boom");
      return decode(input);
    };
    const details = fc.check(fc.property(mutated, (text) => codecBreach(throwing, text) === null), fuzzParameters(500, 10_000));
    assert.ok(details.failed, "a throwing decoder is caught");
    const lenient = () => ({ ok: true, kind: "event", value: { text: "\ud800" }, warnings: [] }) as unknown as Decoded;
    assert.match(codecBreach(lenient, "{}") ?? "", /no canonical form/);
    const inventive = () => ({ ok: true, kind: "event", value: { schema: "paperclip.prp.event.v1" }, warnings: [] }) as unknown as Decoded;
    assert.match(codecBreach(inventive, "{}") ?? "", /canonical form is refused/);
    const stable = () => ({ ok: true, kind: "event", value: events[0], warnings: [] }) as unknown as Decoded;
    assert.equal(codecBreach(stable, "{}"), null, "a valid accepted value passes");
    const refusedWithoutMessage = () => ({ ok: false, error: { code: "invalid_json", path: "", message: "" } }) as Decoded;
    assert.match(codecBreach(refusedWithoutMessage, "{") ?? "", /without a message/);
  });
});
