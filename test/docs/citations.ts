/**
 * Section citations in the repository's text and the headings they point at.
 *
 * Code and docs cite the protocol documents as `runtime.md §5.3` or `wire.md §7.6` (a space after
 * the name and after the sign are both optional); a bare `§5.3` means a section of either one.
 * A section resolves when a heading of the named document (any of docs/protocol/runtime.md and
 * docs/protocol/wire.md for a bare one) starts with its number: `### 5.3 Handshake` resolves
 * 5.3 but not 5.31 or 5, `## 5. Event envelope` resolves 5.
 *
 * Citations of other documents are not ours to check: a sign right after an RFC (`RFC 8785 §3.2`,
 * `the RFC's §3.2.3`) is skipped, and so is a list that continues one (`RFC 7493 §2.3, §4`);
 * likewise a list continuing a named citation (`runtime.md §5.9, §5.3`) keeps that name.
 *
 * Pure functions of strings, plus one directory walk; no process is started (fast test tier).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

export type CitedDoc = "runtime.md" | "wire.md";
export const PROTOCOL_DOCS: readonly CitedDoc[] = ["runtime.md", "wire.md"];

export interface Citation {
  /** The document named before the sign, or null for a bare citation. */
  doc: CitedDoc | null;
  /** The section number, e.g. "5.3" (a trailing period is not part of it). */
  section: string;
  /** 1-based line of the sign. */
  line: number;
}

/** A section sign, optionally after a document name, with its number (digits and inner dots). */
const CITATION = /(?:\b(runtime|wire)\.md ?)?\u00a7 ?(\d+(?:\.\d+)*)/g;
/** Text just before a sign that makes it a citation of something else (an RFC). */
const EXTERNAL_BEFORE = /\bRFC(?:\s*\d+|'s)\s*$/;
/** What may separate two citations of one list: a comma, semicolon, slash, dash, `and`, `or`, `&`. */
const LIST_SEPARATOR = /^\s*(?:,|;|\/|-|\u2013|\u2014|and|or|&)\s*$/;

/** Every citation of a protocol section in `text`; citations of RFCs are left out. */
export function extractCitations(text: string): Citation[] {
  const out: Citation[] = [];
  const lineStarts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lineStarts.push(i + 1);
  const lineOf = (offset: number): number => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  // The previous citation in the text: where it ended, and whose it was (a doc, bare, or external).
  let previous: { end: number; owner: CitedDoc | null | "external" } | undefined;
  for (const m of text.matchAll(CITATION)) {
    const start = m.index!;
    const signAt = start + m[0].indexOf("\u00a7");
    let owner: CitedDoc | null | "external";
    if (m[1] !== undefined) owner = `${m[1]}.md` as CitedDoc;
    else if (previous && LIST_SEPARATOR.test(text.slice(previous.end, start))) owner = previous.owner;
    else if (EXTERNAL_BEFORE.test(text.slice(Math.max(0, start - 40), start))) owner = "external";
    else owner = null;
    previous = { end: start + m[0].length, owner };
    if (owner === "external") continue;
    out.push({ doc: owner, section: m[2]!, line: lineOf(signAt) });
  }
  return out;
}

/** The text of every ATX heading (`## 5.3 Handshake` → "5.3 Handshake"), outside fenced code. */
export function parseHeadings(markdown: string): string[] {
  const headings: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split(/\r?\n/)) {
    const f = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (f) {
      if (fence === undefined) fence = f[1]![0]!;
      else if (f[1]![0] === fence) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const h = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (h) headings.push(h[1]!);
  }
  return headings;
}

/** Whether a heading's text starts with the section number, and the number ends there. */
export function headingStartsWith(heading: string, section: string): boolean {
  if (!heading.startsWith(section)) return false;
  const rest = heading.slice(section.length);
  // "5.3 Handshake" and "5. Event" end the number; "5.31 …" and "5.3.1 …" do not.
  return rest === "" || !/^(?:\d|\.\d)/.test(rest);
}

export type HeadingsByDoc = Partial<Record<CitedDoc, readonly string[]>>;

/** Whether a citation names a heading: of its document, or of either document when bare. */
export function resolves(citation: Pick<Citation, "doc" | "section">, headings: HeadingsByDoc): boolean {
  const docs = citation.doc === null ? PROTOCOL_DOCS : [citation.doc];
  return docs.some((d) => (headings[d] ?? []).some((h) => headingStartsWith(h, citation.section)));
}

export interface Located extends Citation {
  /** Repository-relative path with forward slashes. */
  file: string;
}

/** The unresolved citations of a text, located in `file`. */
export function unresolvedIn(file: string, text: string, headings: HeadingsByDoc): Located[] {
  return extractCitations(text)
    .filter((c) => !resolves(c, headings))
    .map((c) => ({ ...c, file }));
}

/** How a located citation reads in a failure message: `src/a.ts:12: wire.md §7.6`. */
export function describe(c: Located): string {
  return `${c.file}:${c.line}: ${c.doc === null ? "" : `${c.doc} `}\u00a7${c.section}`;
}

/** The folders and files scanned, relative to the repository root. */
export const SCANNED_ROOTS = ["src", "test", "docs", "scripts", "bench", "console", "protocol/schemas", "README.md"];
const TEXT_FILE = /\.(?:ts|tsx|mts|cts|js|mjs|cjs|json|md|html|css)$/;
const SKIPPED_DIR = new Set(["node_modules", "dist"]);

/** The text files under the scanned roots (build output, dependencies and dot-folders skipped). */
export function textFiles(repoRoot: string, roots: readonly string[] = SCANNED_ROOTS): string[] {
  const files: string[] = [];
  const walk = (path: string): void => {
    let entries;
    try {
      entries = readdirSync(path, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOTDIR") {
        if (TEXT_FILE.test(path)) files.push(path);
        return;
      }
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    for (const e of entries) {
      if (e.name.startsWith(".") || SKIPPED_DIR.has(e.name)) continue;
      const child = join(path, e.name);
      if (e.isDirectory()) walk(child);
      else if (e.isFile() && TEXT_FILE.test(e.name)) files.push(child);
    }
  };
  for (const r of roots) walk(join(repoRoot, r));
  return files.map((f) => relative(repoRoot, f).split(sep).join("/")).sort();
}

/** The headings of docs/protocol/runtime.md and wire.md; a missing document has none. */
export function protocolHeadings(repoRoot: string): HeadingsByDoc {
  const out: HeadingsByDoc = {};
  for (const d of PROTOCOL_DOCS) {
    try {
      out[d] = parseHeadings(readFileSync(join(repoRoot, "docs", "protocol", d), "utf8"));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      out[d] = [];
    }
  }
  return out;
}

/** Every citation in the repository, located, and those that resolve to no heading. */
export function scanRepository(repoRoot: string): { all: Located[]; unresolved: Located[] } {
  const headings = protocolHeadings(repoRoot);
  const all: Located[] = [];
  for (const file of textFiles(repoRoot)) {
    const text = readFileSync(join(repoRoot, file), "utf8");
    if (!text.includes("\u00a7")) continue;
    for (const c of extractCitations(text)) all.push({ ...c, file });
  }
  return { all, unresolved: all.filter((c) => !resolves(c, headings)) };
}
