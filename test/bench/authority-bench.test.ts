import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";

const BENCH = fileURLToPath(new URL("../../bench/authority.js", import.meta.url));

/** Runs the bench to its end (a bounded wait: execFile kills it past the timeout). */
function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BENCH, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A smoke run of `bench:authority` with tiny numbers (SQLite only: no server to leave behind). */
describe("bench:authority", () => {
  it("runs 2 runners × 5 events through group commit and prints its figures", async () => {
    const run = await bench(["--runners", "2", "--events", "5", "--store", "sqlite"]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /SQLite: 10 events from 2 runners/);
    for (const figure of [
      "committed events/s",
      "bare batched inserts/s",
      "ratio to bare batched inserts",
      "CPU (the kernel's count)",
      "frame floor",
      "ceiling on one authority thread",
      "ceiling of this bench on",
      "commit → ACK ms",
      "send → ACK ms",
    ])
      assert.ok(run.stdout.includes(figure), `${figure} in:\n${run.stdout}`);
    assert.doesNotMatch(run.stdout, /PostgreSQL/);
  });

  it("refuses a count it cannot run, with its usage", async () => {
    const run = await bench(["--runners", "0"]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /usage: node dist\/bench\/authority\.js/);
  });
});
