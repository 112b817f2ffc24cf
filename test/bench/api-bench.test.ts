import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";

const BENCH = fileURLToPath(new URL("../../bench/api.js", import.meta.url));

/** Runs the bench to its end (a bounded wait: execFile kills it past the timeout). */
function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BENCH, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A smoke run of `bench:api` with tiny numbers: its figures are printed, none is judged. */
describe("bench:api", () => {
  it("streams 30 events to 3 SSE followers, each seq once and in order, and prints its figures", async () => {
    const run = await bench(["--events", "30", "--followers", "3"]);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /bench:api: 30 events × 3 SSE followers .*--events 30 --followers 3/);
    for (const figure of [
      "phase A, 0 followers: 30 events",
      "phase B, 3 followers: 30 events",
      "every follower got seq 1..30 exactly once, in order",
      "added authority CPU per event per follower",
      "phase A again, 0 followers: 30 events",
      "ingest CPU per event (phase A",
      "ratio (added per event per follower / ingest per event)",
      "commit → delivered to follower ms   p50",
    ])
      assert.ok(run.stdout.includes(figure), `${figure} in:\n${run.stdout}`);
    assert.doesNotMatch(run.stdout, /FAILED/);
  });

  it("refuses a count it cannot run, with its usage", async () => {
    const run = await bench(["--followers", "0"]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /usage: node dist\/bench\/api\.js/);
  });
});
