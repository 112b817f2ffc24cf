import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import { spawnRunner, type RunnerHandle } from "../../src/runner/spawn.js";
import type { RunIdentity } from "../../src/transport/envelope.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { authorityFolder, killAll, startDaemon, type Daemon } from "./authority-processes.js";
import { adminJson, runPrp } from "./run-cli.js";

/** prp-runnerd in durable mode with every flag it needs to reach the ticket; nothing listens at the URL. */
function runnerd(input: string, env: NodeJS.ProcessEnv = {}) {
  const args = [
    "--connect-url",
    "ws://127.0.0.1:9/v1/runners/run_1",
    "--state-dir",
    "/nonexistent/state",
    "--run-id",
    "run_1",
    "--session-id",
    "session_1",
    "--runner-id",
    "runner_1",
    "--environment-lease-id",
    "env_1",
    "--turn-id",
    "turn_1",
    "--item-id",
    "item_1",
    "--script",
    "happy-path",
    "--ticket-stdin",
  ];
  const res = spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), ...args], {
    input,
    env: { PATH: process.env.PATH, ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
  return { status: res.status, stderr: res.stderr };
}

describe("prp-runnerd --ticket-stdin", () => {
  let folder: { dir: string; key: string; store: string[] };
  let daemon: Daemon | undefined;
  let runner: RunnerHandle | undefined;
  before(() => {
    folder = authorityFolder("prp-ticket-stdin-");
  });
  after(async () => {
    if (runner) await runner.stop();
    await killAll([daemon]);
    rmSync(folder.dir, { recursive: true, force: true });
  });

  it("refuses an empty stdin, an oversized one, and a ticket given both ways: exit 2, one message", () => {
    for (const [input, env, pattern] of [
      ["", {}, /ticket_stdin_invalid: stdin was empty/],
      ["\n", {}, /ticket_stdin_invalid: stdin was empty/],
      ["x".repeat(5000), {}, /ticket_stdin_invalid: more than 4096 bytes/],
      ["a b\n", {}, /ticket_stdin_invalid: stdin holds more than one line/],
      [
        "bootstrap_x\n",
        { PAPERCLIP_RUNNER_BOOTSTRAP_TICKET: "bootstrap_y" },
        /ticket_ambiguous: choose --ticket-stdin or/,
      ],
    ] as const) {
      const run = runnerd(input, env);
      assert.equal(run.status, 2, `${JSON.stringify(input.slice(0, 20))}: ${run.stderr}`);
      assert.match(run.stderr, pattern);
    }
  });

  it("spawnRunner with ticketVia stdin: the runner delivers its terminal; the ticket is in neither its cmdline nor its environ", async () => {
    daemon = await startDaemon([...folder.store, "--listen", "127.0.0.1:0", "--poll-ms", "50"]);
    const created = adminJson(folder.store, ["authority", "run", "create", "--json", "--script", "happy-path"]) as {
      runId: string;
      identity: RunIdentity;
      connectPath: string;
      protocolVersion: number;
    };
    const { ticket } = adminJson(folder.store, ["authority", "ticket", created.runId, "--json"]) as { ticket: string };
    assert.match(ticket, /^bootstrap_/);
    runner = spawnRunner({
      connectUrl: `${daemon.url}${created.connectPath}`,
      ticket,
      ticketVia: "stdin",
      stateDir: join(folder.dir, "runner-state"),
      identity: created.identity,
      script: "happy-path",
      delayMs: 100,
      protocolMax: created.protocolVersion,
      extraArgs: PATIENT_HARNESS,
      cwd: folder.dir,
    });
    // Read while it runs: both are the process's own, as anyone who may read /proc/<pid> sees them.
    const cmdline = readFileSync(`/proc/${runner.pid}/cmdline`, "utf8");
    const environ = readFileSync(`/proc/${runner.pid}/environ`, "utf8");
    assert.ok(cmdline.includes("--ticket-stdin"), cmdline);
    assert.equal(cmdline.includes(ticket), false, "the ticket is not in argv");
    assert.equal(environ.includes(ticket), false, "the ticket is not in the environment");
    assert.equal(environ.includes("PAPERCLIP_RUNNER_BOOTSTRAP_TICKET"), false);

    const exit = await Promise.race([
      runner.exited,
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`the runner did not exit: ${runner!.stderrTail().join("\n")}`)),
          60_000,
        ).unref(),
      ),
    ]);
    assert.equal(exit.exitCode, 0, runner.stderrTail().join("\n"));
    const events = runPrp(["events", "--run", created.runId, "--json", ...folder.store]);
    assert.equal(events.status, 0, events.stderr);
    assert.match(events.stdout.trim().split("\n").at(-1)!, /"eventType":"run\.terminal"/);
  });
});
