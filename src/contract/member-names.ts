import { pointer } from "./errors.js";

/**
 * Member names as the JSON text spells them, for the duplicate-name check of parseJson.
 * JSON.parse cannot report a repeated name (it keeps the last value), so the text is read
 * again. Hand-written rather than a package: the npm parsers that refuse duplicates re-parse
 * the whole text in JavaScript (several times slower than JSON.parse, and some unmaintained),
 * and the prototype-safety ones (secure-json-parse) do not look at duplicates at all. Here
 * JSON.parse stays the parser; these functions only read text it has already accepted, so they
 * need no error handling of their own: outside a string, every `"` opens one.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The index of the quote that closes the string opened at `open`. */
function closingQuote(text: string, open: number): number {
  let end = text.indexOf('"', open + 1);
  for (;;) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

/** The index of the first character at or after `from` that is not JSON whitespace. */
function skipSpace(text: string, from: number): number {
  let i = from;
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

/**
 * How many member names the text spells: strings followed by a colon. Jumps from quote to
 * quote with indexOf, so it costs little next to JSON.parse and allocates nothing.
 */
export function memberNamesInText(text: string): number {
  let count = 0;
  let open = text.indexOf('"');
  while (open !== -1) {
    const next = skipSpace(text, closingQuote(text, open) + 1);
    if (text.charCodeAt(next) === COLON) count++;
    open = text.indexOf('"', next);
  }
  return count;
}

interface Container {
  /** Member names seen so far; null for an array. */
  names: Set<string> | null;
  path: string;
  /** The member name or array index that the next value takes. */
  at: string | number;
}

/**
 * The first repeated member name and the JSON Pointer of the object holding it, or null. Only
 * called once the counts disagree, so it may build a path and a set per object.
 */
export function duplicateMember(text: string): { path: string; name: string } | null {
  const stack: Container[] = [];
  const childPath = (): string => {
    const top = stack.at(-1);
    return top === undefined ? "" : pointer(top.path, top.at);
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      stack.push({ names: c === 0x7b ? new Set() : null, path: childPath(), at: 0 });
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
    } else if (c === 0x2c) {
      const top = stack.at(-1)!;
      if (top.names === null) top.at = (top.at as number) + 1;
    } else if (c === QUOTE) {
      const end = closingQuote(text, i);
      const top = stack.at(-1);
      if (top?.names && text.charCodeAt(skipSpace(text, end + 1)) === COLON) {
        const name = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.names.has(name)) return { path: top.path, name };
        top.names.add(name);
        top.at = name;
      }
      i = end;
    }
  }
  return null;
}
