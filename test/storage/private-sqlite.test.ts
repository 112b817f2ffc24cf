import assert from "node:assert/strict";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { openPrivateDatabase, StateError } from "../../src/storage/private-sqlite.js";

const refuses = (fn: () => unknown, code: string) =>
  assert.throws(fn, (err: unknown) => err instanceof StateError && err.code === code, code);

describe("private SQLite files", () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "prp-sqlite-"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("refuses a main file over the size bound before opening it", () => {
    const db = openPrivateDatabase(join(root, "big", "s.sqlite"), { maxFileBytes: 1 << 20 });
    db.exec("CREATE TABLE t (x TEXT); INSERT INTO t VALUES (randomblob(200000));");
    db.close();
    refuses(() => openPrivateDatabase(join(root, "big", "s.sqlite"), { maxFileBytes: 100_000 }), "state_too_large");
  });

  it("refuses a symlinked database file", () => {
    const dir = join(root, "link");
    openPrivateDatabase(join(dir, "real.sqlite"), { maxFileBytes: 1 << 20 }).close();
    symlinkSync(join(dir, "real.sqlite"), join(dir, "s.sqlite"));
    refuses(() => openPrivateDatabase(join(dir, "s.sqlite"), { maxFileBytes: 1 << 20 }), "state_symlink");
  });

  it("refuses a state path that is a file, not a directory", () => {
    writeFileSync(join(root, "plain"), "");
    refuses(
      () => openPrivateDatabase(join(root, "plain", "s.sqlite"), { maxFileBytes: 1 << 20 }),
      "state_not_directory",
    );
  });
});
