/**
 * A token stream of TypeScript source with everything that is not contract left out: comments,
 * whitespace, the spelling of string quotes and numeric separators, and trailing commas.
 *
 * Hand-written because the digest must be computed with Node built-ins only (runtime.md §12.2):
 * a runner image carries no TypeScript compiler. It reads the code this project writes (the
 * generated types and registered constant declarations), not arbitrary TypeScript: a `/` is a
 * regular expression where an expression may start, by the usual rule of the preceding token.
 */

export interface Token {
  kind: "word" | "string" | "number" | "template" | "regex" | "punct";
  text: string;
}

/** After these a `/` starts a regular expression rather than a division. */
const REGEX_AFTER_PUNCT = new Set([
  "(",
  ",",
  "=",
  ":",
  "[",
  "!",
  "&",
  "|",
  "?",
  "{",
  "}",
  ";",
  "+",
  "-",
  "*",
  "%",
  "<",
  ">",
  "~",
  "^",
]);
const REGEX_AFTER_WORD = new Set([
  "return",
  "typeof",
  "case",
  "do",
  "else",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "yield",
  "await",
]);
const CLOSERS = new Set(["]", "}", ")"]);

const isIdentStart = (c: string) => /[A-Za-z_$\u0080-\uffff]/.test(c);
const isIdentPart = (c: string) => /[A-Za-z0-9_$\u0080-\uffff]/.test(c);

export class TokenError extends Error {}

export function tokenize(source: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = source.length;
  const regexAllowed = () => {
    const last = out[out.length - 1];
    if (!last) return true;
    if (last.kind === "punct") return REGEX_AFTER_PUNCT.has(last.text);
    return last.kind === "word" && REGEX_AFTER_WORD.has(last.text);
  };
  while (i < n) {
    const c = source[i]!;
    const next = source[i + 1];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === "/" && next === "/") {
      i = lineEnd(source, i);
      continue;
    }
    if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      if (end < 0) throw new TokenError(`unterminated comment at offset ${i}`);
      i = end + 2;
      continue;
    }
    if (c === '"' || c === "'") {
      const end = stringEnd(source, i, c);
      // The value, in one spelling: 'a' and "a" are the same contract.
      out.push({ kind: "string", text: JSON.stringify(unescape(source.slice(i + 1, end))) });
      i = end + 1;
      continue;
    }
    if (c === "`") {
      const end = templateEnd(source, i);
      out.push({ kind: "template", text: source.slice(i, end + 1) });
      i = end + 1;
      continue;
    }
    if (c === "/" && regexAllowed()) {
      const end = regexEnd(source, i);
      out.push({ kind: "regex", text: source.slice(i, end) });
      i = end;
      continue;
    }
    if (/[0-9]/.test(c) || (c === "." && next !== undefined && /[0-9]/.test(next))) {
      let j = i + 1;
      while (j < n && /[0-9A-Za-z_.]/.test(source[j]!)) j++;
      out.push({ kind: "number", text: source.slice(i, j).replace(/_/g, "") });
      i = j;
      continue;
    }
    if (isIdentStart(c)) {
      let j = i + 1;
      while (j < n && isIdentPart(source[j]!)) j++;
      out.push({ kind: "word", text: source.slice(i, j) });
      i = j;
      continue;
    }
    if (CLOSERS.has(c) && out[out.length - 1]?.text === ",") out.pop();
    out.push({ kind: "punct", text: c });
    i++;
  }
  return out;
}

function lineEnd(s: string, i: number): number {
  const end = s.indexOf("\n", i);
  return end < 0 ? s.length : end;
}

function stringEnd(s: string, open: number, quote: string): number {
  for (let j = open + 1; j < s.length; j++) {
    if (s[j] === "\\") {
      j++;
      continue;
    }
    if (s[j] === quote) return j;
    if (s[j] === "\n") break;
  }
  throw new TokenError(`unterminated string at offset ${open}`);
}

/** The closing backquote, skipping `${…}` substitutions and the strings inside them. */
function templateEnd(s: string, open: number): number {
  let depth = 0;
  for (let j = open + 1; j < s.length; j++) {
    const c = s[j]!;
    if (c === "\\") {
      j++;
      continue;
    }
    if (depth === 0 && c === "`") return j;
    if (c === "$" && s[j + 1] === "{") {
      depth++;
      j++;
      continue;
    }
    if (depth > 0 && c === "}") {
      depth--;
      continue;
    }
    if (depth > 0 && (c === '"' || c === "'")) {
      j = stringEnd(s, j, c);
      continue;
    }
    if (depth > 0 && c === "`") {
      j = templateEnd(s, j);
      continue;
    }
  }
  throw new TokenError(`unterminated template literal at offset ${open}`);
}

function regexEnd(s: string, open: number): number {
  let inClass = false;
  for (let j = open + 1; j < s.length; j++) {
    const c = s[j]!;
    if (c === "\\") {
      j++;
      continue;
    }
    if (c === "\n") break;
    if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    else if (c === "/" && !inClass) {
      let k = j + 1;
      while (k < s.length && /[a-z]/.test(s[k]!)) k++;
      return k;
    }
  }
  throw new TokenError(`unterminated regular expression at offset ${open}`);
}

const SIMPLE_ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", b: "\b", f: "\f", v: "\v", "0": "\0" };

/** The value of a quoted string's body, for the escapes a key list or a type literal uses. */
function unescape(body: string): string {
  return body.replace(/\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|\r?\n|.)/g, (_, e: string) => {
    if (e.startsWith("u{")) return String.fromCodePoint(Number.parseInt(e.slice(2, -1), 16));
    if (e.length > 1 && (e[0] === "u" || e[0] === "x")) return String.fromCharCode(Number.parseInt(e.slice(1), 16));
    if (e === "\n" || e === "\r\n") return "";
    return SIMPLE_ESCAPES[e] ?? e;
  });
}

/** The stream as one string to hash: tokens joined by a separator no token contains. */
export const tokenText = (tokens: readonly Token[]): string => tokens.map((t) => t.text).join("\u0000");
