import { contractError, pointer, type ContractError } from "./errors.js";
import { MAX_FRAME_BYTES, MAX_JSON_DEPTH } from "./versions.js";

export type JsonInput = string | Uint8Array;
export type Parsed = { ok: true; value: unknown; text: string } | { ok: false; error: ContractError };

// fatal: malformed UTF-8 is an error, not U+FFFD; ignoreBOM: a BOM stays in the text so that
// JSON.parse refuses it, the same as for string input.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Bytes or text to a JSON value, refusing (as values, never by throwing) input over the frame
 * limit, malformed UTF-8, malformed or empty JSON, and nesting deeper than the depth limit.
 */
export function parseJson(input: JsonInput, maxBytes = MAX_FRAME_BYTES): Parsed {
  const size = typeof input === "string" ? Buffer.byteLength(input, "utf8") : input.byteLength;
  if (size > maxBytes) {
    return { ok: false, error: contractError("frame_too_large", "", `input is ${size} bytes; the limit is ${maxBytes}`) };
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
  const tooDeep = depthExceeds(value, MAX_JSON_DEPTH);
  if (tooDeep !== null) {
    return { ok: false, error: contractError("invalid_json", tooDeep, `JSON nests deeper than ${MAX_JSON_DEPTH} levels`) };
  }
  return { ok: true, value, text };
}

/**
 * The pointer of the first container nested deeper than `limit` (the root counts as level 1),
 * or null. Iterative, so any depth the parser accepted is walked without recursion. This runs on
 * every decoded frame, so the common case allocates nothing but the stack; the pointer is only
 * built for the rare refusal.
 */
function depthExceeds(value: unknown, limit: number): string | null {
  if (value === null || typeof value !== "object") return null;
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop() as Record<string, unknown>;
    const depth = depths.pop()!;
    for (const key in node) {
      const child = node[key];
      if (child !== null && typeof child === "object") {
        if (depth + 1 > limit) return pointerTo(value, child as object);
        nodes.push(child as object);
        depths.push(depth + 1);
      }
    }
  }
  return null;
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
