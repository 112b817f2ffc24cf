import { contractError, pointer, type ContractError } from "./errors.js";
import { duplicateMember, memberNamesInText } from "./member-names.js";
import { cutNoted } from "./text-cut.js";
import { MAX_FRAME_BYTES, MAX_JSON_DEPTH } from "./versions.js";

export type JsonInput = string | Uint8Array;
export type Parsed = { ok: true; value: unknown; text: string } | { ok: false; error: ContractError };

// fatal: malformed UTF-8 is an error, not U+FFFD; ignoreBOM: a BOM stays in the text so that
// JSON.parse refuses it, the same as for string input.
/** How much of a member name (or its path) an error repeats. */
const MAX_NAME_BYTES = 200;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Bytes or text to a JSON value, refusing (as values, never by throwing) input over the frame
 * limit, malformed UTF-8, malformed or empty JSON, nesting deeper than the depth limit, and
 * what I-JSON (RFC 7493 §2.3) and prototype safety forbid: a member name repeated in one object
 * (JSON.parse keeps the last, another reader may keep the first) and a member named `__proto__`
 * (JSON.parse keeps it as data; `Object.assign` or a merge would make it a prototype).
 */
export function parseJson(input: JsonInput, maxBytes = MAX_FRAME_BYTES): Parsed {
  const size = typeof input === "string" ? Buffer.byteLength(input, "utf8") : input.byteLength;
  if (size > maxBytes) {
    return {
      ok: false,
      error: contractError("frame_too_large", "", `input is ${size} bytes; the limit is ${maxBytes}`),
    };
  }
  let text: string;
  if (typeof input === "string") {
    text = input;
  } else {
    try {
      text = utf8.decode(input);
    } catch {
      return { ok: false, error: contractError("invalid_json", "", "input is not valid UTF-8") };
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text); // V8 parses iteratively, so deep input cannot overflow the stack here
  } catch (err) {
    const message = /^\s*$/.test(text) ? "input is empty" : `input is not JSON: ${(err as Error).message}`;
    return { ok: false, error: contractError("invalid_json", "", message) };
  }
  const shape = walk(value, MAX_JSON_DEPTH);
  if (shape.tooDeep !== null) return { ok: false, error: tooDeepError(value as object, shape.tooDeep, MAX_JSON_DEPTH) };
  if (shape.proto !== null) {
    return {
      ok: false,
      error: contractError(
        "invalid_json",
        pointerTo(value as object, shape.proto),
        'a member named "__proto__" is refused: copied into another object it would become that object\'s prototype',
      ),
    };
  }
  // JSON.parse keeps one member per name, so a repeated name leaves fewer members than the text has.
  if (shape.members !== memberNamesInText(text)) {
    const duplicate = duplicateMember(text);
    // No repeated name found although the counts differ: not understood, so refused.
    const { path, name } = duplicate ?? { path: "", name: "(unlocated)" };
    // The name and its path are the sender's text, of any size: kept short, as every error's message is read by a person.
    return {
      ok: false,
      error: contractError(
        "invalid_json",
        cutNoted(path, MAX_NAME_BYTES),
        `duplicate member name ${cutNoted(JSON.stringify(name), MAX_NAME_BYTES)}: readers disagree on which value counts, so I-JSON (RFC 7493) forbids it`,
      ),
    };
  }
  return { ok: true, value, text };
}

/**
 * The refusal of a parsed value nested deeper than `limit` levels, or null. JSON.parse accepts
 * any depth, but every recursive walker after it (canonical JSON, redaction, schema validation,
 * JSON.stringify, the ACP SDK) overflows the stack on deep enough input: untrusted JSON that
 * did not come through parseJson is checked here, before anything walks it.
 */
export function nestingError(value: unknown, limit = MAX_JSON_DEPTH): ContractError | null {
  const { tooDeep } = walk(value, limit);
  return tooDeep === null ? null : tooDeepError(value as object, tooDeep, limit);
}

const tooDeepError = (root: object, tooDeep: object, limit: number): ContractError =>
  contractError("invalid_json", pointerTo(root, tooDeep), `JSON nests deeper than ${limit} levels`);

interface Shape {
  /** The first container nested deeper than the limit (the root counts as level 1). */
  tooDeep: object | null;
  /** The first object with a member named `__proto__`. */
  proto: object | null;
  /** Object members in the whole value. */
  members: number;
}

/**
 * One pass over a parsed value: its depth, its `__proto__` members and how many members its
 * objects hold. Iterative, so any depth the parser accepted is walked without recursion. This
 * runs on every decoded frame, so the common case allocates nothing but the stack; pointers are
 * only built for the rare refusal.
 */
function walk(value: unknown, limit: number): Shape {
  const shape: Shape = { tooDeep: null, proto: null, members: 0 };
  if (value === null || typeof value !== "object") return shape;
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop() as Record<string, unknown>;
    const depth = depths.pop()!;
    const isObject = !Array.isArray(node);
    for (const key in node) {
      if (isObject) {
        shape.members++;
        if (key === "__proto__") shape.proto ??= node;
      }
      const child = node[key];
      if (child !== null && typeof child === "object") {
        if (depth + 1 > limit) {
          shape.tooDeep = child as object;
          return shape;
        }
        nodes.push(child as object);
        depths.push(depth + 1);
      }
    }
  }
  return shape;
}

/** The JSON Pointer of `target` inside `root`, found breadth-first. */
function pointerTo(root: object, target: object): string {
  const queue: Array<[object, string]> = [[root, ""]];
  for (let i = 0; i < queue.length; i++) {
    const [node, path] = queue[i]!;
    if (node === target) return path;
    for (const key in node) {
      const child = (node as Record<string, unknown>)[key];
      if (child !== null && typeof child === "object") queue.push([child as object, pointer(path, key)]);
    }
  }
  return "";
}
