import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";

const BENCH = fileURLToPath(new URL("../../bench/dispatch.js", import.meta.url));

/** Runs the bench to its end (a bounded wait: execFile kills it past the timeout). */
function bench(args: string[], timeout = 240_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BENCH, ...args], { timeout }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A smoke run of `bench:dispatch` with tiny numbers: its figures are printed, none is judged. */
describe("bench:dispatch", () => {
  it("claims 40 runs with 8 workers on SQLite and PostgreSQL, times 2 submits each way, and prints its figures", async () => {
    const run = await bench(["--runs", "40", "--submits", "2", "--workers", "1"]);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /bench:dispatch: --runs 40 --submits 2 --workers 1/);
    for (const figure of [
      "SQLite claims (8 workers, 40 runs; bare = UPDATE",
      "SQLite has no SKIP LOCKED",
      "PostgreSQL claims (8 workers, 40 runs; bare = UPDATE",
      "FOR UPDATE SKIP LOCKED LIMIT 1",
      "ours, want=1: 40 runs by 8 workers",
      "ours, want=4: 40 runs by 8 workers",
      "Submit → first committed event (SQLite, 1 idle prp worker processes, 2 runs each way",
      "through the queue (POST /v1/runs, a worker claims)     ms p50",
      "by hand (POST /v1/runs, POST …/tickets, prp-runnerd)   ms p50",
      "ratio queue / hand",
    ])
      assert.ok(run.stdout.includes(figure), `${figure} in:\n${run.stdout}`);
    assert.equal(run.stdout.match(/bare claims\/s/g)?.length, 2, run.stdout);
    assert.equal(run.stdout.match(/ratio to bare \d/g)?.length, 4, run.stdout);
    assert.doesNotMatch(run.stdout + run.stderr, /FAILED/);
  });

  it("refuses a count it cannot run, with its usage", async () => {
    const run = await bench(["--runs", "3000"], 60_000);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /usage: node dist\/bench\/dispatch\.js/);
  });
});
