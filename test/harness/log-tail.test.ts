import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BoundedLogBuffer } from "../../src/harness/log-tail.js";

describe("bounded log tail", () => {
  it("keeps the last 32 lines and counts the dropped ones", () => {
    const tail = new BoundedLogBuffer();
    for (let i = 0; i < 40; i++) tail.push(`line ${i}`);
    const snap = tail.snapshot();
    assert.equal(snap.lines.length, 32);
    assert.equal(snap.lines[0], "line 8");
    assert.equal(snap.droppedLines, 8);
    assert.equal(
      snap.retainedBytes,
      snap.lines.reduce((n, l) => n + Buffer.byteLength(l), 0),
    );
  });

  it("keeps at most 16 KiB, dropping the oldest lines first", () => {
    const tail = new BoundedLogBuffer();
    for (let i = 0; i < 5; i++) tail.push("x".repeat(5000));
    const snap = tail.snapshot();
    assert.equal(snap.lines.length, 3);
    assert.equal(snap.retainedBytes, 15_000);
    assert.equal(snap.droppedLines, 2);
  });

  it("cuts a single line longer than the byte limit at a character boundary", () => {
    const tail = new BoundedLogBuffer(32, 10);
    tail.push("ééééééééé");
    assert.equal(tail.snapshot().lines[0], "ééééé");
  });
});
