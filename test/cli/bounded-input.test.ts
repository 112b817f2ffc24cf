import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";

// Each command runs under a 1.2 GB address-space cap (a Node process starts near 0.75 GB): one
// that read an endless input whole would die of it within seconds, instead of taking the machine.
const CAP_KB = 1_200_000;
const prp = `"${process.execPath}" "${join(packageRoot(), "bin/prp.js")}"`;

function capped(shell: string): { status: number | null; stdout: string; stderr: string } {
  const res = spawnSync("/bin/sh", ["-c", `ulimit -v ${CAP_KB} && ${shell}`], { encoding: "utf8", timeout: 60_000 });
  assert.equal(res.error, undefined, `${shell}: ${res.error?.message}`);
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe("endless inputs are refused at their limit, not read whole", () => {
  it("prp validate /dev/zero: frame_too_large at the 1 MiB limit", () => {
    const run = capped(`${prp} validate --json /dev/zero`);
    assert.equal(run.status, 1, run.stderr);
    const verdict = JSON.parse(run.stdout);
    assert.equal(verdict.code, "frame_too_large");
    assert.match(verdict.message, /larger than the 1048576-byte limit/);
  });

  it("prp replay /dev/zero (a fixture): frame_too_large", () => {
    const run = capped(`${prp} replay /dev/zero`);
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.stderr, /^\/dev\/zero: frame_too_large at \/: input is larger than the 1048576-byte limit/);
  });

  it("cat /dev/zero | prp replay --events -: the first line is over the frame limit", () => {
    const run = capped(`cat /dev/zero | ${prp} replay --events -`);
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.stderr, /^stdin: line 1: frame_too_large at \/: line is longer than the 1048576-byte frame limit/);
  });

  it("an endless stream of blank lines stops at the stream limit", () => {
    const run = capped(`yes '' | ${prp} replay --events -`);
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.stderr, /^stdin: frame_too_large at \/: input is larger than the 67108864-byte limit/);
  });

  it("prp run --answer /dev/zero: refused before the run starts", () => {
    const run = capped(`${prp} run --script happy-path --answer /dev/zero`);
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /\/dev\/zero: frame_too_large: input is larger than the 1048576-byte limit/);
  });

  it("a script read from /dev/zero is refused at the script limit", () => {
    const run = capped(`${prp} fake-harness --script /dev/zero`);
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /script refused: frame_too_large at \/: input is larger than the 67108864-byte limit/);
  });
});
