import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { readFileBounded, readStreamBounded } from "../../src/contract/bounded-read.js";

/** A stream of zeros that never ends, counting the bytes anyone pulled from it. */
function endlessZeros(): { stream: Readable; pulled: () => number } {
  let pulled = 0;
  const stream = new Readable({
    read() {
      pulled += 65_536;
      this.push(Buffer.alloc(65_536));
    },
  });
  return { stream, pulled: () => pulled };
}

describe("reading an input within its limit", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-bounded-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("reads a file of exactly the limit, and refuses one byte more, naming the file and the limit", () => {
    const exact = join(dir, "exact");
    writeFileSync(exact, Buffer.alloc(1000, 0x61));
    const ok = readFileBounded(exact, { maxBytes: 1000 });
    assert.ok(ok.ok && ok.bytes.length === 1000);
    const over = join(dir, "over");
    writeFileSync(over, Buffer.alloc(1001, 0x61));
    assert.deepEqual(readFileBounded(over, { maxBytes: 1000 }), {
      ok: false,
      error: {
        code: "frame_too_large",
        path: "",
        message: "input is larger than the 1000-byte limit (reading stopped at byte 1001)",
        source: over,
        limitBytes: 1000,
      },
    });
  });

  it("stops reading /dev/zero one byte past the limit instead of reading it all", () => {
    const before = process.memoryUsage().arrayBuffers;
    const read = readFileBounded("/dev/zero", { maxBytes: 1_048_576 });
    assert.equal(read.ok, false);
    assert.equal(!read.ok && read.error.code, "frame_too_large");
    assert.equal(!read.ok && read.error.source, "/dev/zero");
    assert.ok(process.memoryUsage().arrayBuffers - before < 16 * 1_048_576, "memory stayed near the limit");
  });

  it("destroys an endless stream once it passes the limit, having pulled no more than the limit and a chunk or two", async () => {
    const { stream, pulled } = endlessZeros();
    const read = await readStreamBounded(stream, "stdin", { maxBytes: 1_048_576 });
    assert.equal(!read.ok && read.error.code, "frame_too_large");
    assert.equal(!read.ok && read.error.source, "stdin");
    assert.ok(stream.destroyed, "nothing more is read");
    assert.ok(pulled() <= 1_048_576 + 4 * 65_536, `pulled ${pulled()} bytes`);
  });

  it("refuses the first line over the line limit, saying which line, before reading the rest", async () => {
    const stream = Readable.from([
      Buffer.from("{}\n{}\r\n"),
      Buffer.alloc(600, 0x20),
      Buffer.alloc(600, 0x20),
      Buffer.from("\n{}\n"),
    ]);
    const read = await readStreamBounded(stream, "events.ndjson", { maxBytes: 10_000, maxLineBytes: 1000 });
    assert.deepEqual(!read.ok && [read.error.code, read.error.line, read.error.limitBytes], [
      "frame_too_large",
      3,
      1000,
    ]);
    const fine = await readStreamBounded(
      Readable.from([Buffer.from("{}\n"), Buffer.alloc(1000, 0x20), Buffer.from("\n")]),
      "s",
      { maxBytes: 10_000, maxLineBytes: 1000 },
    );
    assert.ok(fine.ok && fine.bytes.length === 1004, "a line of exactly the limit is read");
  });

  it("reports a file it cannot read as unreadable, with the system's reason", () => {
    const missing = readFileBounded(join(dir, "missing"), { maxBytes: 10 });
    assert.equal(!missing.ok && missing.error.code, "unreadable");
    assert.match(!missing.ok ? missing.error.message : "", /ENOENT/);
    const directory = readFileBounded(dir, { maxBytes: 10 });
    assert.equal(!directory.ok && directory.error.code, "unreadable");
  });
});
