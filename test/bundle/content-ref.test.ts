import assert from "node:assert/strict";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { contentRefOf, contentRefProblems } from "../../src/bundle/content-ref.js";

describe("checking the files a bundle references", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-content-ref-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const bundle = () => join(dir, "native-execution.json");

  it("accepts a file with the recorded size and digest", () => {
    writeFileSync(join(dir, "transcript.ndjson"), "{}\n");
    assert.deepEqual(
      contentRefProblems(bundle(), [
        { at: "/transcript", ref: contentRefOf("transcript.ndjson", Buffer.from("{}\n"), "application/x-ndjson") },
      ]),
      [],
    );
  });

  it("reads a referenced file no further than its recorded size: a link to /dev/zero is a mismatch, not an endless read", () => {
    symlinkSync("/dev/zero", join(dir, "endless"));
    const ref = contentRefOf("endless", Buffer.alloc(10), "application/octet-stream");
    assert.deepEqual(contentRefProblems(bundle(), [{ at: "/artifacts/0", ref }]), [
      "/artifacts/0: endless is more than 10 bytes, the size the bundle says",
    ]);
  });
});
