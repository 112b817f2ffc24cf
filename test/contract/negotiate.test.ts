import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LOCAL_RANGE, negotiate } from "../../src/contract/index.js";

describe("negotiate", () => {
  it("selects the highest version both peers support", () => {
    assert.deepEqual(negotiate(LOCAL_RANGE, { min: 1, max: 3 }), { ok: true, version: 3 });
    assert.deepEqual(negotiate(LOCAL_RANGE, { min: 1, max: 2 }), { ok: true, version: 2 });
    assert.deepEqual(negotiate(LOCAL_RANGE, { min: 2, max: 9 }), { ok: true, version: 3 });
    assert.deepEqual(negotiate({ min: 1, max: 1 }, LOCAL_RANGE), { ok: true, version: 1 });
  });

  it("fails closed when the ranges do not overlap", () => {
    const none = negotiate(LOCAL_RANGE, { min: 4, max: 5 });
    assert.equal(none.ok, false);
    assert.equal(none.ok ? "" : none.error.code, "unsupported_required_version");
    assert.match(none.ok ? "" : none.error.message, /local=1-3; peer=4-5/);
    assert.equal(negotiate({ min: 2, max: 3 }, { min: 1, max: 1 }).ok, false);
  });

  it("refuses a malformed range", () => {
    for (const peer of [
      { min: 3, max: 2 },
      { min: 0, max: 2 },
      { min: 1.5, max: 2 },
      { min: Number.NaN, max: 2 },
    ]) {
      const r = negotiate(LOCAL_RANGE, peer);
      assert.equal(r.ok, false, JSON.stringify(peer));
    }
  });
});
