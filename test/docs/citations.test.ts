/**
 * Every `runtime.md §N`, `wire.md §N` and bare `§N` in the repository's sources, tests, docs,
 * scripts, benches, console and schemas names a heading of docs/protocol/runtime.md or wire.md.
 * Reads files only, so it runs in the fast tier. The section sign is written `\u00a7` in this
 * file so that the examples below are not themselves citations.
 */
import { describe as group, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  describe,
  extractCitations,
  headingStartsWith,
  parseHeadings,
  protocolHeadings,
  resolves,
  scanRepository,
  unresolvedIn,
} from "./citations.js";

const S = "\u00a7";

/** The repository root: the nearest folder above this file with package.json and docs/. */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "docs"))) return dir;
    const up = resolve(dir, "..");
    if (up === dir) throw new Error("citations test: no repository root above this file");
    dir = up;
  }
}

group("citation extraction", () => {
  it("finds named and bare citations with their lines, without a trailing period", () => {
    const text = `a (runtime.md ${S}5.3) b\nsee wire.md${S}7.6.\nbare ${S} 5.10, and ${S}4.`;
    assert.deepEqual(extractCitations(text), [
      { doc: "runtime.md", section: "5.3", line: 1 },
      { doc: "wire.md", section: "7.6", line: 2 },
      { doc: null, section: "5.10", line: 3 },
      { doc: null, section: "4", line: 3 },
    ]);
  });

  it("keeps the document of a list of citations", () => {
    const text = `runtime.md ${S}5.9, ${S}5.3; wire.md ${S}5\u2013${S}6`;
    assert.deepEqual(
      extractCitations(text).map((c) => `${c.doc} ${c.section}`),
      ["runtime.md 5.9", "runtime.md 5.3", "wire.md 5", "wire.md 6"],
    );
  });

  it("skips citations of RFCs, and lists continuing them", () => {
    const text = `I-JSON, RFC 7493 ${S}2.3, ${S}4; RFC 8785 ${S}3.2.2.3; the RFC's ${S}3.2.3; then ${S}5.3`;
    assert.deepEqual(extractCitations(text), [{ doc: null, section: "5.3", line: 1 }]);
  });
});

group("heading resolution", () => {
  it("a heading `### 5.3 Handshake` resolves 5.3 but not 5.31, 5.3.1 or 5", () => {
    const headings = { "runtime.md": parseHeadings("# Title\n\n### 5.3 Handshake\n") };
    assert.equal(resolves({ doc: null, section: "5.3" }, headings), true);
    assert.equal(resolves({ doc: "runtime.md", section: "5.3" }, headings), true);
    assert.equal(resolves({ doc: null, section: "5.31" }, headings), false);
    assert.equal(resolves({ doc: null, section: "5.3.1" }, headings), false);
    assert.equal(resolves({ doc: null, section: "5" }, headings), false);
    assert.equal(resolves({ doc: "wire.md", section: "5.3" }, headings), false, "named: only its own document");
  });

  it("`## 5. Event envelope` resolves 5; headings inside code fences do not count", () => {
    const md = "## 5. Event envelope\n\n```\n## 6. Not a heading\n```\n";
    assert.deepEqual(parseHeadings(md), ["5. Event envelope"]);
    assert.equal(headingStartsWith("5. Event envelope", "5"), true);
    assert.equal(headingStartsWith("5.3 Handshake", "5"), false);
  });

  it(`reports runtime.md ${S}99.9 and a bare ${S}98 as unresolved, with file and line`, () => {
    const headings = { "runtime.md": ["5.3 Handshake"], "wire.md": ["7.6 Credentials"] };
    const text = `ok runtime.md ${S}5.3 and wire.md ${S}7.6\nbad runtime.md ${S}99.9\nbad ${S}98\n`;
    const found = unresolvedIn("src/x.ts", text, headings).map(describe);
    assert.deepEqual(found, [`src/x.ts:2: runtime.md ${S}99.9`, `src/x.ts:3: ${S}98`]);
  });
});

group("the repository's citations", () => {
  const root = repoRoot();

  it("docs/protocol has both documents", () => {
    const headings = protocolHeadings(root);
    assert.ok((headings["wire.md"] ?? []).length > 0, "docs/protocol/wire.md has no headings");
    assert.ok((headings["runtime.md"] ?? []).length > 0, "docs/protocol/runtime.md has no headings");
  });

  it("every citation names a heading of docs/protocol/runtime.md or wire.md", () => {
    const { all, unresolved } = scanRepository(root);
    assert.ok(all.length > 0, "no citation found: is the scan looking in the right place?");
    assert.deepEqual(
      unresolved.map(describe),
      [],
      `${unresolved.length} of ${all.length} citations name no heading:\n${unresolved.map(describe).join("\n")}`,
    );
  });
});
