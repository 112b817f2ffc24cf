import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { startTestPostgres, withPgClient, type TestPostgres } from "../support/postgres.js";
import { runnerArgs, spawnRunnerd, startDaemon } from "./authority-processes.js";
import { answerWhenAsked, eventLines, judgeRun } from "./authority-run.js";
import { runPrp } from "./run-cli.js";

describe("prp authority serve --store postgres://…: the daemon and the admin commands on PostgreSQL", () => {
  let dir: string;
  let postgres: TestPostgres;
  let key: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-authority-pg-"));
    postgres = await startTestPostgres();
    key = join(dir, "authority-key");
    assert.equal(runPrp(["authority", "key", "--out", key]).status, 0);
  });
  after(async () => {
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a read command refuses a database without the store's schema and makes none there; run create makes it", async () => {
    const url = await postgres.database();
    const store = ["--store", url, "--server-key-file", key];
    for (const args of [
      ["authority", "runs"],
      ["events", "--run", "run_1"],
      ["authority", "revoke", "run_1"],
    ]) {
      const refused = runPrp([...args, ...store]);
      assert.equal(refused.status, 2, `prp ${args.join(" ")}: ${refused.stdout} ${refused.stderr}`);
      assert.match(refused.stderr, /^prp: store_missing: postgres:\/\/\S+: no store in this database/);
    }
    assert.equal(
      await withPgClient(url, async (c) => (await c.query("SELECT to_regclass('schema_migrations') AS t")).rows[0].t),
      null,
      "no schema was made",
    );
    assert.equal(runPrp(["authority", "run", "create", ...store]).status, 0);
    assert.equal(runPrp(["authority", "runs", ...store]).status, 0);
  });

  it("a whole run by hand: the admin's answers reach the runner connected to the daemon, the log reads back in order, SIGTERM exits 0; no password in any output", async () => {
    const url = await postgres.database();
    const password = decodeURIComponent(new URL(url).password);
    const store = ["--store", url, "--server-key-file", key];
    const admin = (args: string[]) => {
      const run = runPrp([...args, ...store]);
      assert.equal(run.status, 0, `prp ${args.join(" ")}: ${run.stderr}`);
      assert.equal(run.stderr.includes(password), false, "no password on stderr");
      return JSON.parse(run.stdout) as Record<string, unknown>;
    };
    const daemon = await startDaemon([...store, "--poll-ms", "50"]);
    try {
      const created = admin([
        "authority",
        "run",
        "create",
        "--json",
        "--script",
        "permission-input",
        "--prompt",
        "Play the permission-input script.",
      ]) as { runId: string; identity: { turnId: string }; runnerArgs: string[] };
      const ticket = admin(["authority", "ticket", created.runId, "--json"]) as { ticket: string };
      const runner = spawnRunnerd(
        [...runnerArgs(created, daemon.url, join(dir, "runner")), "--delay-ms", "0", ...PATIENT_HARNESS],
        ticket.ticket,
        dir,
      );
      const committed = () => eventLines(runPrp(["events", "--run", created.runId, "--json", ...store]).stdout);
      const resolve = (payload: Record<string, unknown>) =>
        void admin([
          "authority",
          "command",
          created.runId,
          "request.resolve",
          "--json",
          "--payload",
          JSON.stringify(payload),
        ]);
      await answerWhenAsked(committed, resolve, created.identity.turnId, () => `runner: ${runner.stderr()}`);
      assert.equal(await runner.exited(), 0, runner.stderr());
      const events = committed();
      assert.deepEqual(judgeRun(events), { runTerminalState: "succeeded", problems: [] });
      assert.equal(events.filter((e) => e.eventType === "runtime_request.resolved").length, 2);
      const listening = daemon.log().find((l) => l.event === "authority.listening");
      assert.match(String(listening?.store), /^postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/prp_test_/);
    } finally {
      daemon.kill("SIGTERM");
      assert.equal(await daemon.exited(), 0, daemon.stderr());
    }
    assert.equal(daemon.stderr().includes(password), false, "no password in the daemon's log");
    assert.equal(daemon.stdout().includes(password), false);
  });
});
