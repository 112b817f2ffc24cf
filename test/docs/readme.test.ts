import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";

const readme = readFileSync(join(packageRoot(), "README.md"), "utf8");

describe("README.md, the front door", () => {
  it("is at most 200 lines: the reference lives in docs/", () => {
    const lines = readme.split("\n").length - (readme.endsWith("\n") ? 1 : 0);
    assert.ok(lines <= 200, `README.md has ${lines} lines; move reference material into docs/`);
  });

  it("opens with the two commands a fresh machine runs", () => {
    const block = /^# PRP Kit\n\n```sh\n(.*)\n(.*)\n```\n/.exec(readme);
    assert.ok(block, "README.md must open with a ```sh block of the two commands");
    assert.match(block[1]!, /^npm ci && npm start\s+#/);
    assert.match(block[2]!, /^npm ci && npm test\s+#/);
  });
});
