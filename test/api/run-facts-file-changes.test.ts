import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DIFF_TEXT, KEEP_DIFFS } from "../../src/api/file-change-facts.js";
import { copyFacts, emptyFacts, foldFacts } from "../../src/api/run-facts.js";
import type { PrpEvent } from "../../src/contract/kinds.js";

let seq = 0;
/** An envelope with just what the fold reads: its type, identity and payload. */
const ev = (eventType: string, ids: { turnId?: string; itemId?: string }, payload: object = {}): PrpEvent =>
  ({ eventType, sourceSeq: ++seq, emittedAt: "2026-01-01T00:00:00Z", ...ids, payload }) as unknown as PrpEvent;

const BODY = { schema: "paperclip.output.body.v1", bodyId: "b".repeat(64), sha256: "b".repeat(64) };
const body = (byteLength: number) => ({
  ...BODY,
  byteLength: String(byteLength),
  mediaType: "text/plain; charset=utf-8",
});
const file = (path: string, changeKind = "modified", additions: number | null = 1, deletions: number | null = 1) => ({
  path,
  changeKind,
  previousPath: null,
  additions,
  deletions,
});
const diff = (diffId: string, files: object[], b: object | null = null, complete = false) => ({
  schema: "paperclip.workspace.diff.v1",
  diffId,
  complete,
  files,
  body: b,
});
const chunk = (text: string, offset: number, b: object) => ({
  schema: "paperclip.output.body.chunk.v1",
  body: b,
  offset: String(offset),
  sha256: "c".repeat(64),
  text,
});

describe("a run's file changes, folded from its workspace diffs", () => {
  it("by tool execution (the event's itemId) or the turn's own; a later event of a diff replaces it", () => {
    const facts = emptyFacts();
    foldFacts(facts, [
      ev("turn.started", { turnId: "turn_1" }),
      // An ACP diff: no body, counts from the whole texts.
      ev("workspace.change.updated", { turnId: "turn_1", itemId: "tool_1" }, diff("tool_1_diff_1", [file("a.ts")])),
      ev("workspace.change.updated", { turnId: "turn_1" }, diff("turn_diff", [file("b.ts", "added", null, null)])),
      ev(
        "workspace.diff.recorded",
        { turnId: "turn_1" },
        diff("turn_diff", [file("b.ts", "added", 3, 0), file("c.ts", "weird")], null, true),
      ),
    ]);
    assert.deepEqual(
      facts.fileChanges.map(({ diffId, itemId, turnId, complete, files, diff: text }) => ({
        diffId,
        itemId,
        turnId,
        complete,
        kinds: files.map((f) => [f.path, f.changeKind, f.additions, f.deletions]),
        text,
      })),
      [
        {
          diffId: "tool_1_diff_1",
          itemId: "tool_1",
          turnId: "turn_1",
          complete: false,
          kinds: [["a.ts", "modified", 1, 1]],
          text: null,
        },
        {
          diffId: "turn_diff",
          itemId: null,
          turnId: "turn_1",
          complete: true,
          kinds: [
            ["b.ts", "added", 3, 0],
            ["c.ts", "modified", 1, 1],
          ],
          text: null,
        },
      ],
    );
  });

  it("a diff's text from its body's chunks, whole when it all arrived", () => {
    const facts = emptyFacts();
    const text = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n";
    foldFacts(facts, [
      ev("workspace.change.updated", { itemId: "tool_1" }, diff("d1", [file("x")], body(Buffer.byteLength(text)))),
      ev("output.body.chunk", {}, chunk(text.slice(0, 10), 0, body(Buffer.byteLength(text)))),
    ]);
    assert.equal(facts.fileChanges[0]!.diff, text.slice(0, 10));
    assert.equal(facts.fileChanges[0]!.diffTruncated, true, "not all of it arrived yet");
    const before = copyFacts(facts);
    foldFacts(facts, [ev("output.body.chunk", {}, chunk(text.slice(10), 10, body(Buffer.byteLength(text))))]);
    assert.equal(facts.fileChanges[0]!.diff, text);
    assert.equal(facts.fileChanges[0]!.diffTruncated, false);
    assert.equal(before.fileChanges[0]!.diff, text.slice(0, 10), "a copy taken before is not changed");
  });

  it("a hostile diff: its path kept as text, a 5 MB body kept to its first 64 KiB, counts and diffs bounded", () => {
    const facts = emptyFacts();
    const path = "src/a../\u001b[31mevil\u0007<img src=x>.ts";
    const big = 5 * 1024 * 1024;
    const events = [ev("workspace.change.updated", { itemId: "tool_1" }, diff("d1", [file(path)], body(big)))];
    for (let offset = 0; offset < big; offset += 32_000)
      events.push(ev("output.body.chunk", {}, chunk("+".repeat(Math.min(32_000, big - offset)), offset, body(big))));
    foldFacts(facts, events);
    const [change] = facts.fileChanges;
    assert.equal(change!.files[0]!.path, path);
    assert.equal(change!.diff!.length, DIFF_TEXT);
    assert.equal(change!.diffTruncated, true);
    assert.equal(change!.diffBytes, big);

    const many = emptyFacts();
    foldFacts(many, [
      ev(
        "workspace.change.updated",
        {},
        diff(
          "files",
          Array.from({ length: 1024 }, (_, i) => file(`f${i}`)),
        ),
      ),
      ...Array.from({ length: KEEP_DIFFS + 5 }, (_, i) => ev("workspace.change.updated", {}, diff(`d${i}`, []))),
    ]);
    assert.equal(many.fileChanges.length, KEEP_DIFFS);
    assert.equal(many.fileChanges[0]!.diffId, "d5", "the last ones kept");
  });

  it("chunks of a body no kept diff names are not kept", () => {
    const facts = emptyFacts();
    foldFacts(facts, [
      ev("output.body.chunk", {}, chunk("early", 0, body(5))),
      ev("workspace.change.updated", {}, diff("d1", [file("x")])),
    ]);
    assert.equal(facts.fileChanges[0]!.diff, null);
  });
});
