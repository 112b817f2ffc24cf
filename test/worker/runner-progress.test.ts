import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import Database from "better-sqlite3";
import { STATE_FILE } from "../../src/runner/durable/runner-state.js";
import { SCHEMA_SQL } from "../../src/runner/durable/state/open-checks.js";
import { runnerEmittedNothing } from "../../src/worker/runner-progress.js";

describe("whether a runner emitted nothing (the drain timeout's local proof)", () => {
  it("no state: nothing; a fresh state: nothing; an event numbered or a command journaled: something; an unreadable state: something", () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-runner-progress-"));
    try {
      assert.equal(runnerEmittedNothing(join(dir, "absent")), true);
      const stateDir = join(dir, "state");
      mkdirSync(stateDir);
      const db = new Database(join(stateDir, STATE_FILE));
      db.exec(SCHEMA_SQL);
      db.prepare("INSERT INTO runner_state VALUES (1, 'connecting', 1, 0, 0, 0, 0, 0, 0, 0)").run();
      assert.equal(runnerEmittedNothing(stateDir), true);
      db.prepare("INSERT INTO processed_commands VALUES ('cmd_1', 1, 'run.prepare', 'accepted', NULL, 'f')").run();
      assert.equal(runnerEmittedNothing(stateDir), false);
      db.exec("DELETE FROM processed_commands; UPDATE runner_state SET next_source_seq = 2");
      assert.equal(runnerEmittedNothing(stateDir), false);
      db.close();
      const garbage = join(dir, "garbage");
      mkdirSync(garbage);
      new Database(join(garbage, STATE_FILE)).close(); // a database without the tables
      assert.equal(runnerEmittedNothing(garbage), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
