import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runPrp } from "./run-cli.js";
import { writeSleeperScript } from "../support/scripts.js";

describe("prp run --stall-limit-ms", () => {
  it("passes the limit and grace to its runner: a harness deaf to the interrupt is cancelled, stalled", () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-stall-run-"));
    try {
      const script = writeSleeperScript(dir);
      const run = runPrp([
        "run",
        "--json",
        "--sandbox",
        "none",
        "--script",
        script,
        "--out",
        dir,
        "--stall-limit-ms",
        "300",
        "--stall-grace-ms",
        "300",
      ]);
      assert.equal(run.status, 1, `a cancelled run exits 1: ${run.stderr}`);
      const events = run.stdout
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as { eventType: string; payload: Record<string, any> });
      assert.deepEqual(
        events.filter((e) => e.eventType === "runner.diagnostic").map((e) => e.payload.code),
        ["run_stalled", "run_stall_cancelled"],
      );
      const terminals = events.filter((e) => e.eventType === "run.terminal");
      assert.equal(terminals.length, 1);
      assert.equal(terminals[0]!.payload.stopReason?.code, "stalled");
      assert.match(run.stderr, /stop reason\s+stall: stalled/, "the summary names the stall");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
