import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import {
  authorityFolder,
  killAll,
  spawnRunnerd,
  startApiDaemon,
  type Child,
  type Daemon,
} from "./authority-processes.js";
import type { CliRun } from "./run-cli.js";

/** `prp …`, bounded: a command that hangs (a FIFO read) fails the test instead of stalling it. */
function prp(args: string[]): CliRun {
  const res = spawnSync(process.execPath, [join(packageRoot(), "bin/prp.js"), ...args], {
    encoding: "utf8",
    input: "",
    timeout: 30_000,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

const ok = (run: CliRun, what: string): string => {
  assert.equal(run.status, 0, `${what}: ${run.stderr}`);
  return run.stdout;
};

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("the admin commands and prp events with --api URL --token-file F", () => {
  let folder: { dir: string; key: string; store: string[] };
  const children: Array<Daemon | Child> = [];
  before(() => {
    folder = authorityFolder("prp-api-cli-");
  });
  after(async () => {
    await killAll(children);
    rmSync(folder.dir, { recursive: true, force: true });
  });

  it("refuses what cannot work before any request: each a one-line message, exit 2 (exit 1 when nothing answers)", async () => {
    const token = join(folder.dir, "some-token");
    writeFileSync(token, "prp_tok_0000000000000000_x\n", { mode: 0o600 });
    const fifo = join(folder.dir, "token-fifo");
    execFileSync("mkfifo", [fifo]);
    const api = ["--api", "http://127.0.0.1:9"];
    for (const [args, pattern] of [
      [["authority", "runs", ...api], /--api needs --token-file/],
      [["authority", "runs", "--token-file", token], /--token-file goes with --api/],
      [["authority", "runs", ...api, "--token-file", token, ...folder.store], /choose --api or --store/],
      [["events", "--run", "r", ...api, "--token-file", fifo], /token_unreadable: .* is not a regular file/],
      [["authority", "runs", "--api", "ftp://x", "--token-file", token], /--api must be an http/],
      [
        ["authority", "run", "create", ...api, "--token-file", token, "--run-id", "run_x"],
        /--run-id cannot be used with --api/,
      ],
    ] as const) {
      const run = prp([...args]);
      assert.equal(run.status, 2, `${args.join(" ")}: ${run.stdout} ${run.stderr}`);
      assert.match(run.stderr, pattern);
      assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    }
    const port = await closedPort();
    const unreachable = prp(["authority", "runs", "--api", `http://127.0.0.1:${port}`, "--token-file", token]);
    assert.equal(unreachable.status, 1, unreachable.stderr);
    assert.match(unreachable.stderr, /api_unreachable/);
  });

  it("a run created, ticketed, followed and refused through the API prints what the store path prints", async () => {
    const tokenFile = join(folder.dir, "admin-token");
    ok(prp(["authority", "token", "create", ...folder.store, "--scope", "admin", "--out", tokenFile]), "token create");
    const { daemon, apiUrl } = await startApiDaemon([...folder.store, "--listen", "127.0.0.1:0", "--poll-ms", "50"]);
    children.push(daemon);
    const api = ["--api", apiUrl, "--token-file", tokenFile];

    const created = JSON.parse(
      ok(
        prp([
          "authority",
          "run",
          "create",
          ...api,
          "--script",
          "happy-path",
          "--prompt",
          "go",
          "--connect-url",
          daemon.url,
          "--json",
        ]),
        "run create",
      ),
    ) as { runId: string; commands: Array<{ type: string }>; runnerArgs: string[] };
    assert.deepEqual(
      created.commands.map((c) => c.type),
      ["run.prepare", "session.open", "turn.start"],
    );
    const ticket = ok(prp(["authority", "ticket", created.runId, ...api]), "ticket").trim();
    assert.match(ticket, /^\S+$/, "the ticket alone on stdout");
    const runnerDir = mkdtempSync(join(tmpdir(), "prp-api-cli-runner-"));
    const stateDir = join(runnerDir, "state");
    const runnerArgs = created.runnerArgs.map((a) => a.replace("<state-dir>", stateDir));
    const runner = spawnRunnerd([...runnerArgs, "--delay-ms", "0"], ticket, folder.dir);
    children.push(runner);

    const followed = ok(prp(["events", "--run", created.runId, "--follow", "--json", ...api]), "events --follow --api");
    assert.equal(await runner.exited(), 0, runner.stderr());
    const stored = ok(prp(["events", "--run", created.runId, "--json", ...folder.store]), "events from the store");
    assert.equal(followed, stored, "the API's stream prints the store's events, byte for byte");
    assert.equal(ok(prp(["events", "--run", created.runId, "--json", ...api]), "events --api"), stored);
    assert.match(stored.trim().split("\n").at(-1)!, /"eventType":"run\.terminal"/);

    // A run created in the store directly carries the same spec, labels included.
    const direct = JSON.parse(
      ok(
        prp(["authority", "run", "create", ...folder.store, "--label", "team=cli", "--priority", "5", "--json"]),
        "run create in the store",
      ),
    ) as { runId: string };
    const runs = ok(prp(["authority", "runs", "--json", ...api]), "runs --api")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { runId: string; state: string; labels: object; priority: number });
    assert.deepEqual(
      runs.map((r) => [r.runId, r.state, r.labels, r.priority]).sort(),
      [
        [created.runId, "ended", {}, 0],
        // Created in the store, it waits in the queue like one created through the API.
        [direct.runId, "queued", { team: "cli" }, 5],
      ].sort(),
    );
    const badLabel = prp(["authority", "run", "create", ...folder.store, "--label", "Team=x"]);
    assert.equal(badLabel.status, 2, badLabel.stderr);
    const refused = prp(["authority", "command", created.runId, "run.cancel", ...api]);
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /^prp: run_ended/);
    rmSync(runnerDir, { recursive: true, force: true });
  });
});
