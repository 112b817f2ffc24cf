import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeValue } from "../../src/contract/decode.js";
import { AUTHORITY_ID_PATTERN, RUNNER_ID_PATTERN } from "../../src/contract/ids.js";
import { IDENTITY_PATTERN } from "../../src/transport/envelope.js";
import { event } from "./samples.js";

const id = (length: number) => `r${"x".repeat(length - 1)}`;

describe("id patterns", () => {
  it("bound runner ids at 160 characters and authority identity values at 240", () => {
    assert.equal(RUNNER_ID_PATTERN.test(id(160)), true);
    assert.equal(RUNNER_ID_PATTERN.test(id(161)), false);
    assert.equal(AUTHORITY_ID_PATTERN.test(id(240)), true);
    assert.equal(AUTHORITY_ID_PATTERN.test(id(241)), false);
  });

  it("start with a letter or digit and allow only letters, digits and ._:- after it", () => {
    for (const pattern of [RUNNER_ID_PATTERN, AUTHORITY_ID_PATTERN]) {
      assert.equal(pattern.test("a"), true);
      assert.equal(pattern.test("0run_1.a:b-c"), true);
      for (const bad of ["", "_run", "-run", ".run", "run 1", "run/1", "rün", "run\n"])
        assert.equal(pattern.test(bad), false, JSON.stringify(bad));
    }
  });

  it("are the transport's identity pattern, not a copy of it", () => {
    assert.equal(IDENTITY_PATTERN, AUTHORITY_ID_PATTERN);
  });

  it("let a runner put its longest ids into the envelope of every event version", () => {
    const ids = {
      runId: id(160),
      normalizedSessionId: id(160),
      sourceInstanceId: id(160),
      turnId: id(160),
      itemId: id(160),
    };
    for (const version of [1, 2, 3] as const) {
      const decoded = decodeValue(event(version, ids), { kind: "event" });
      assert.ok(decoded.ok, decoded.ok ? "" : decoded.error.message);
      assert.equal(decodeValue(event(version, { runId: id(161) }), { kind: "event" }).ok, false);
    }
  });
});
