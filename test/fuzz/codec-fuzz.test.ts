import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { canonicalJson } from "../../src/contract/canonical-json.js";
import { decode, decodeValue, type Decoded } from "../../src/contract/decode.js";
import { admit, type Admission } from "../../src/contract/admission.js";
import type { ContractError, ContractErrorCode } from "../../src/contract/errors.js";
import { FUZZ_SEED, fuzz, fuzzParameters, mutatedText, mutatedValue, randomBytes, validDocuments } from "./support.js";

const CODES = new Set<ContractErrorCode>([
  "invalid_json",
  "schema_validation",
  "unsupported_required_version",
  "unsupported_required_schema",
  "binding_mismatch",
  "frame_too_large",
]);

/**
 * The codec's promise, as one oracle: decoding never throws; a refusal is a typed error with a
 * known code and a message; an accepted event or command goes through the shared admission rule
 * without a throw, refused only for having no canonical JSON form (a lone surrogate, too many
 * values), and once admitted its canonical form decodes again to the same value. Returns what
 * broke, or null.
 */
export function codecBreach(
  decodeInput: (input: string | Uint8Array) => Decoded,
  input: string | Uint8Array,
): string | null {
  let decoded: Decoded;
  try {
    decoded = decodeInput(input);
  } catch (err) {
    return `decode threw: ${(err as Error).message}`;
  }
  if (!decoded.ok) return typedRefusal(decoded.error);
  if (decoded.kind !== "event" && decoded.kind !== "command") return null;
  let admitted: Admission<"event" | "command">;
  try {
    admitted = admit(decoded.kind, decoded.value);
  } catch (err) {
    return `admission threw: ${(err as Error).message}`;
  }
  if (!admitted.ok)
    return admitted.refusedBy === "canonical_json"
      ? typedRefusal(admitted.error)
      : `decoded, then refused by the same contract at admission: ${admitted.error.message}`;
  const again = decode(admitted.canonical);
  if (!again.ok) return `admitted, but its canonical form is refused: ${again.error.code} ${again.error.message}`;
  return canonicalJson(again.value) === admitted.canonical
    ? null
    : "admitted, but its canonical form decodes to another value";
}

function typedRefusal(error: ContractError): string | null {
  if (!CODES.has(error.code)) return `unknown refusal code ${error.code}`;
  return typeof error.message === "string" && error.message.length > 0 ? null : "a refusal without a message";
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

  it("random bytes: refused with a typed error or accepted and admitted, never a throw", async () => {
    await fuzz("codec bytes", fc.property(randomBytes, holds), 3000, 20_000);
  });

  it("random JSON values and texts", async () => {
    await fuzz("codec json", fc.property(fc.json({ maxDepth: 4 }), holds), 2000, 20_000);
    await fuzz(
      "codec values",
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        try {
          decodeValue(value);
        } catch (err) {
          throw new Error(`decodeValue threw: ${(err as Error).message}`, { cause: err });
        }
      }),
      2000,
      20_000,
    );
  });

  it("valid commands and events with one value changed, removed or added", async () => {
    const mutated = fc.constantFrom(...documents).chain((doc) => mutatedValue(doc));
    await fuzz(
      "codec mutated values",
      fc.property(mutated, (value) => holds(JSON.stringify(value))),
      3000,
      30_000,
    );
  });

  it("valid commands and events as text, cut, with a byte changed, a key repeated or __proto__ added", async () => {
    const mutated = fc.constantFrom(...documents).chain((doc) => mutatedText(doc));
    await fuzz("codec mutated text", fc.property(mutated, holds), 3000, 30_000);
  });

  it("a repeated key or a __proto__ key is refused as invalid_json, wherever it sits", async () => {
    const doubled = fc
      .constantFrom(...documents)
      .chain((doc) =>
        fc
          .constantFrom(...Object.keys(doc))
          .map((key) => `{${JSON.stringify(key)}:${JSON.stringify(doc[key])},${JSON.stringify(doc).slice(1)}`),
      );
    await fuzz(
      "codec repeated keys",
      fc.property(doubled, (text) => {
        const decoded = decode(text);
        assert.equal(decoded.ok ? "accepted" : decoded.error.code, "invalid_json");
      }),
      300,
      10_000,
    );
    for (const doc of documents.slice(0, 20)) {
      const decoded = decode(`{"__proto__":{"x":1},${JSON.stringify(doc).slice(1)}`);
      assert.equal(decoded.ok ? "accepted" : decoded.error.code, "invalid_json");
    }
  });

  it("the oracle fails on a decoder that throws, one that accepts what the contract refuses, and a refusal without a message", () => {
    const mutated = fc.constantFrom(...documents).chain((doc) => mutatedText(doc));
    const throwing = (input: string | Uint8Array) => {
      if (String(input).includes("\ud800") || String(input).length % 7 === 0) throw new Error("boom");
      return decode(input);
    };
    const details = fc.check(
      fc.property(mutated, (text) => codecBreach(throwing, text) === null),
      fuzzParameters(500, 10_000),
    );
    assert.ok(details.failed, "a throwing decoder is caught");
    const inventive = () =>
      ({ ok: true, kind: "event", value: { schema: "paperclip.prp.event.v1" }, warnings: [] }) as unknown as Decoded;
    assert.match(codecBreach(inventive, "{}") ?? "", /refused by the same contract/);
    const surrogate = () =>
      ({
        ok: true,
        kind: "event",
        value: { ...events[0], normalizedSessionId: "\ud800" },
        warnings: [],
      }) as unknown as Decoded;
    assert.equal(codecBreach(surrogate, "{}"), null, "no canonical form: a typed refusal at admission");
    const stable = () => ({ ok: true, kind: "event", value: events[0], warnings: [] }) as unknown as Decoded;
    assert.equal(codecBreach(stable, "{}"), null, "a valid accepted value passes");
    const refusedWithoutMessage = () =>
      ({ ok: false, error: { code: "invalid_json", path: "", message: "" } }) as Decoded;
    assert.match(codecBreach(refusedWithoutMessage, "{") ?? "", /without a message/);
  });
});
