import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { conformanceOutputLine } from "../../src/contract/conformance.js";
import { decode } from "../../src/contract/index.js";
import { protocolDir } from "../../src/contract/package-root.js";

describe("cross-language conformance pair", () => {
  it("our tracer prints the expected output byte for byte", () => {
    const input = decode(readFileSync(join(protocolDir(), "fixtures/conformance-minimal-run.json")), {
      kind: "conformance-fixture",
    });
    assert.ok(input.ok);
    const expected = readFileSync(join(protocolDir(), "fixtures/conformance-expected-output.json"), "utf8");
    assert.equal(conformanceOutputLine(input.value), expected);
    assert.equal(expected.split("\n").length, 2, "one line plus a newline");
  });

  it("output without a session id is rejected", () => {
    const line = JSON.stringify({
      schemaVersion: "paperclip.runner.phase0.output.v1",
      runIdentity: { runId: "run_1" },
      result: { status: "succeeded", summary: "ok" },
    });
    const d = decode(line);
    assert.equal(d.ok ? "" : d.error.code, "schema_validation");
    assert.equal(d.ok ? "" : d.error.path, "/runIdentity");
  });
});
