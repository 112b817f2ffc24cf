import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TapDigest } from "../../scripts/tap-digest.js";

// What `node --test` printed for a file with a passing test, a failing test inside a suite, and a
// failing top-level test (paths shortened).
const TAP = [
  "TAP version 13",
  "# Subtest: outer",
  "    # Subtest: passes",
  "    ok 1 - passes",
  "      ---",
  "      duration_ms: 1.369484",
  "      ...",
  "    # Subtest: fails deep",
  "    not ok 2 - fails deep",
  "      ---",
  "      duration_ms: 4.319666",
  "      location: '/repo/dist/test/a.test.js:5:3'",
  "      failureType: 'testCodeFailure'",
  "      error: |-",
  "        Expected values to be strictly deep-equal:",
  "        + actual - expected",
  "        ",
  "          {",
  "        +   a: 1",
  "        -   a: 2",
  "          }",
  "      code: 'ERR_ASSERTION'",
  "      name: 'AssertionError'",
  "      expected:",
  "        a: 2",
  "      actual:",
  "        a: 1",
  "      operator: 'deepStrictEqual'",
  "      stack: |-",
  "        TestContext.<anonymous> (file:///repo/dist/test/a.test.js:5:35)",
  "        Test.runInAsyncScope (node:async_hooks:206:9)",
  "        Test.run (node:internal/test_runner/test:796:25)",
  "        Suite.processPendingSubtests (node:internal/test_runner/test:526:18)",
  "        Test.postRun (node:internal/test_runner/test:889:19)",
  "        Test.run (node:internal/test_runner/test:835:12)",
  "        async Promise.all (index 0)",
  "        async Suite.run (node:internal/test_runner/test:1135:7)",
  "        async Test.processPendingSubtests (node:internal/test_runner/test:526:7)",
  "      ...",
  "    1..2",
  "not ok 1 - outer",
  "  ---",
  "  duration_ms: 7.743542",
  "  type: 'suite'",
  "  location: '/repo/dist/test/a.test.js:3:1'",
  "  failureType: 'subtestsFailed'",
  "  error: '1 subtest failed'",
  "  code: 'ERR_TEST_FAILURE'",
  "  ...",
  "# Subtest: top fails",
  "not ok 2 - top fails",
  "  ---",
  "  duration_ms: 0.224919",
  "  location: '/repo/dist/test/a.test.js:7:1'",
  "  failureType: 'testCodeFailure'",
  "  error: 'boom: the thing'",
  "  code: 'ERR_TEST_FAILURE'",
  "  stack: |-",
  "    TestContext.<anonymous> (file:///repo/dist/test/a.test.js:7:31)",
  "    Test.runInAsyncScope (node:async_hooks:206:9)",
  "    Test.run (node:internal/test_runner/test:796:25)",
  "    Test.processPendingSubtests (node:internal/test_runner/test:526:18)",
  "    Suite.postRun (node:internal/test_runner/test:889:19)",
  "    Suite.run (node:internal/test_runner/test:1150:10)",
  "    async Test.processPendingSubtests (node:internal/test_runner/test:526:7)",
  "  ...",
  "1..2",
  "# tests 3",
  "# suites 1",
  "# pass 1",
  "# fail 2",
  "# cancelled 0",
  "# skipped 0",
  "# todo 0",
  "# duration_ms 201.542381",
];

function digest(lines: string[]): { passed: string[]; tail: string[] } {
  const d = new TapDigest();
  return { passed: lines.flatMap((l) => d.push(l)), tail: d.end() };
}

const SUMMARY = TAP.filter((l) => /^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /.test(l));

describe("the TAP digest of failing tests, printed above the summary", () => {
  it("passes every line through in order, holding back only the summary", () => {
    const { passed } = digest(TAP);
    assert.deepEqual(passed, TAP.slice(0, TAP.length - SUMMARY.length));
  });

  it("names each failing test with its suite, location and error, then prints the summary", () => {
    const { tail } = digest(TAP);
    assert.deepEqual(tail.slice(-SUMMARY.length), SUMMARY, "the summary comes last, unchanged");
    const text = tail.slice(0, -SUMMARY.length).join("\n");
    assert.match(text, /^# failing tests \(2\):$/m);
    assert.match(text, /^# {3}outer > fails deep$/m);
    assert.match(text, /^# {5}location: '\/repo\/dist\/test\/a\.test\.js:5:3'$/m);
    assert.match(text, /^# {7}Expected values to be strictly deep-equal:$/m);
    assert.match(text, /^# {3}top fails$/m);
    assert.match(text, /^# {5}error: 'boom: the thing'$/m);
    assert.doesNotMatch(text, /^# {3}outer$/m, "a suite that failed only through its tests is not repeated");
    assert.doesNotMatch(text, /stack|TestContext/, "stacks stay in the full log");
    assert.ok(
      tail.every((l) => l.startsWith("# ")),
      "every added line is a TAP comment",
    );
  });

  it("adds nothing when no test failed, and misses none that did", () => {
    const passing = TAP.filter((_, i) => i < TAP.indexOf("    # Subtest: fails deep"));
    assert.deepEqual(digest(passing).tail, []);
    // One failure taken out of the stream: the digest must count one, not two.
    const start = TAP.indexOf("# Subtest: top fails");
    const oneFailure = [...TAP.slice(0, start), ...TAP.slice(TAP.indexOf("1..2", start))];
    const text = digest(oneFailure).tail.join("\n");
    assert.match(text, /^# failing tests \(1\):$/m);
    assert.doesNotMatch(text, /top fails/);
  });
});
