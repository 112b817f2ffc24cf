import { ContractViolation, contractError, type ContractError } from "./errors.js";

/** Limits of canonicalisation (runtime.md §6.6): nesting depth and number of values. */
export const CANONICAL_MAX_DEPTH = 64;
export const CANONICAL_MAX_NODES = 10_000;

/**
 * RFC 8785 (JCS) canonical JSON: object members sorted by their UTF-16 code units, no
 * whitespace, numbers in ECMAScript form, strings with JSON's minimal escaping.
 *
 * Written here rather than taken from a package because the contract also needs bounds the
 * RFC leaves out: depth 64 and 10,000 values, and refusing non-finite numbers, cycles, sparse
 * arrays, lone surrogates and anything that is not plain JSON data. The packages that implement
 * JCS either need Node 22 or silently coerce such input.
 * Throws ContractViolation (code schema_validation) on such input.
 */
export function canonicalJson(value: unknown): string {
  const state = { nodes: 0, seen: new Set<object>() };
  return write(value, null, 1, state);
}

/**
 * Where a value sits, as a chain of member names and indexes. A JSON Pointer string is built
 * only for a refusal: building one per value cost more than writing the value.
 */
interface Place {
  parent: Place | null;
  key: string | number;
}

const pathOf = (place: Place | null): string => (place === null ? "" : `${pathOf(place.parent)}/${place.key}`);
const at = (parent: Place | null, key: string | number): Place => ({ parent, key });

function fail(place: Place | null, message: string): never {
  throw new ContractViolation(contractError("schema_validation", pathOf(place), message));
}

// Lone surrogates have no UTF-8 form, so JCS (which requires I-JSON) cannot represent them.
function writeString(s: string, place: Place | null): string {
  if (!s.isWellFormed()) fail(place, "string contains a lone surrogate, which canonical JSON cannot encode");
  return JSON.stringify(s);
}

function write(
  value: unknown,
  place: Place | null,
  depth: number,
  state: { nodes: number; seen: Set<object> },
): string {
  if (++state.nodes > CANONICAL_MAX_NODES) fail(place, `more than ${CANONICAL_MAX_NODES} values`);
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) fail(place, `number ${value} is not finite`);
      return JSON.stringify(value); // ECMAScript Number-to-String, as RFC 8785 §3.2.2.3 requires
    case "string":
      return writeString(value, place);
    case "object":
      break;
    default:
      fail(place, `a ${typeof value} is not JSON data`);
  }
  const obj = value as object;
  if (depth > CANONICAL_MAX_DEPTH) fail(place, `nested deeper than ${CANONICAL_MAX_DEPTH} levels`);
  if (state.seen.has(obj)) fail(place, "value contains a cycle");
  state.seen.add(obj);
  let out: string;
  if (Array.isArray(obj)) {
    const parts: string[] = [];
    for (let i = 0; i < obj.length; i++) {
      if (!(i in obj)) fail(at(place, i), "sparse array");
      parts.push(write(obj[i], at(place, i), depth + 1, state));
    }
    out = `[${parts.join(",")}]`;
  } else {
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) fail(place, "not a plain object");
    const keys = Object.keys(obj).sort(); // default sort compares UTF-16 code units, as JCS requires
    const parts = keys.map(
      (k) => `${writeString(k, place)}:${write((obj as Record<string, unknown>)[k], at(place, k), depth + 1, state)}`,
    );
    out = `{${parts.join(",")}}`;
  }
  state.seen.delete(obj);
  return out;
}

/** canonicalJson as a value: the refusal of a value without a canonical form is returned, not thrown. */
export function canonicalForm(value: unknown): { ok: true; text: string } | { ok: false; error: ContractError } {
  try {
    return { ok: true, text: canonicalJson(value) };
  } catch (err) {
    if (err instanceof ContractViolation) return { ok: false, error: err.error };
    throw err; // not a refusal of the value: a fault of this process
  }
}

/** Structural equality after canonicalisation: the duplicate-event and fixture-result rule. */
export const canonicallyEqual = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
