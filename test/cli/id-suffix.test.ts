import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { newIdSuffix } from "../../src/contract/id-suffix.js";
import { RUNNER_ID_PATTERN } from "../../src/contract/ids.js";

const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:T]/g, "").slice(0, 14);

describe("new run ids", () => {
  it("are the UTC start second and six random hex digits", () => {
    const from = Date.now();
    const suffix = newIdSuffix();
    const time = suffix.slice(0, 14);
    assert.match(suffix, /^\d{14}_[0-9a-f]{6}$/);
    assert.ok(time >= stamp(from) && time <= stamp(Date.now()), `${time} is the current second`);
  });

  it("differ between runs started in the same second", () => {
    const suffixes = new Set(Array.from({ length: 50 }, newIdSuffix));
    assert.ok(suffixes.size >= 49, `${suffixes.size} distinct of 50`);
  });

  it("make valid runner ids with every prefix a run uses", () => {
    const suffix = newIdSuffix();
    for (const prefix of ["run", "session", "runner", "env", "turn", "item"])
      assert.match(`${prefix}_${suffix}`, RUNNER_ID_PATTERN);
  });
});
