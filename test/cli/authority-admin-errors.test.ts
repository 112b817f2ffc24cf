import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { authorityFolder, killAll, startDaemon, type Daemon } from "./authority-processes.js";
import type { CliRun } from "./run-cli.js";

/** `prp …` bounded in time: a command that hangs fails the test (status null) instead of stalling it. */
function prp(args: string[], timeoutMs = 30_000): CliRun {
  const res = spawnSync(process.execPath, [join(packageRoot(), "bin/prp.js"), ...args], {
    encoding: "utf8",
    input: "",
    timeout: timeoutMs,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** The command failed with `status` and said why in one line, no stack trace. */
function saidInOneLine(run: CliRun, status: number, pattern: RegExp): void {
  assert.equal(run.status, status, `exit ${run.status}; stdout: ${run.stdout} stderr: ${run.stderr}`);
  assert.match(run.stderr, pattern);
  assert.equal(run.stderr.trim().split("\n").length, 1, `one line: ${run.stderr}`);
  assert.doesNotMatch(run.stderr, /SqliteError|\n\s+at /);
}

/** Writes zeros into `path` until its filesystem has no block left. */
function fill(path: string): void {
  const fd = openSync(path, "a");
  const block = Buffer.alloc(4096);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    closeSync(fd);
  }
}

describe("the admin commands fail in one clear line: a missing store, a FIFO key, an ended run, a full disk", () => {
  const { dir, key } = authorityFolder("prp-admin-errors-");
  const children: Daemon[] = [];
  const mount = join(dir, "small-disk");
  let mounted = false;
  after(async () => {
    await killAll(children);
    if (mounted) execFileSync("umount", [mount]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("a read command refuses a store that is not there and makes none; run create makes one", () => {
    const missing = join(dir, "nonexistent", "dir", "x.db");
    const flags = ["--store", `sqlite:${missing}`, "--server-key-file", key];
    for (const args of [
      ["authority", "runs"],
      ["events", "--run", "run_1"],
      ["authority", "ticket", "run_1"],
      ["authority", "command", "run_1", "run.cancel"],
      ["authority", "revoke", "run_1"],
      ["console"],
    ]) {
      saidInOneLine(
        prp([...args, ...flags]),
        2,
        /^prp: store_missing: sqlite:\S+\/nonexistent\/dir\/x\.db: no store here/,
      );
      assert.equal(existsSync(join(dir, "nonexistent")), false, `prp ${args.join(" ")} made nothing`);
    }
    const created = prp(["authority", "run", "create", ...flags]);
    assert.equal(created.status, 0, created.stderr);
    assert.equal(prp(["authority", "runs", ...flags]).status, 0);
  });

  it("a --server-key-file that is a FIFO is refused at once, not waited on", () => {
    const fifo = join(dir, "secrets", "key-fifo");
    execFileSync("mkfifo", ["-m", "600", fifo]);
    saidInOneLine(
      prp(["authority", "runs", "--store", `sqlite:${join(dir, "store")}`, "--server-key-file", fifo], 15_000),
      2,
      /server_key_not_file: \S+key-fifo: the server key path is not a regular file/,
    );
    // The demo's option errors are usage errors: the reason, then where the usage is.
    const demo = prp(["demo", "--server-key-file", fifo, "--out", join(dir, "fifo-demo")], 15_000);
    assert.equal(demo.status, 2, demo.stderr);
    assert.match(
      demo.stderr,
      /^prp: server_key_not_file: \S+key-fifo: the server key path is not a regular file\n\(run with --help for usage\)\n$/,
    );
  });

  it("prp authority command on an ended run is refused (run_ended), and nothing is queued", () => {
    const demo = prp(["demo", "--json", "--delay-ms", "0", "--out", dir, ...PATIENT_HARNESS], 120_000);
    const { runId } = JSON.parse(demo.stdout.trim().split("\n").at(-1)!) as { runId: string };
    const flags = [
      "--store",
      `sqlite:${join(dir, "demo", runId, "authority")}`,
      "--server-key-file",
      join(dir, "demo", runId, "authority-server-key"),
    ];
    const before = prp(["authority", "runs", "--json", ...flags]);
    assert.equal(
      (JSON.parse(before.stdout) as { terminal: boolean }).terminal,
      true,
      `the demo's run ended: ${demo.stdout} ${demo.stderr}`,
    );
    saidInOneLine(
      prp([
        "authority",
        "command",
        runId,
        "turn.interrupt",
        "--payload",
        JSON.stringify({ turnId: runId.replace(/^run_/, "turn_") }),
        ...flags,
      ]),
      1,
      new RegExp(`^prp: run_ended at /runId: run ${runId} has ended`),
    );
    assert.equal(prp(["authority", "runs", "--json", ...flags]).stdout, before.stdout, "nothing queued");
  });

  it("on a full disk (a 1 MiB tmpfs): the store and the cause in one line; a revoke beside the daemon still goes through", async (t) => {
    mkdirSync(mount);
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m,mode=700", "tmpfs", mount], { stdio: "ignore" });
      mounted = true;
    } catch {
      return t.skip("cannot mount a tmpfs here (needs root)");
    }
    const flags = ["--store", `sqlite:${join(mount, "store")}`, "--server-key-file", key];
    assert.equal(prp(["authority", "run", "create", "--run-id", "run_full", ...flags]).status, 0);
    const daemon = await startDaemon(flags);
    children.push(daemon);
    // Writes beside the daemon leave its WAL with room in it, as on any store in use.
    for (let i = 0; i < 2; i++) assert.equal(prp(["authority", "run", "create", ...flags]).status, 0);
    fill(join(mount, "filler"));

    saidInOneLine(
      prp(["authority", "command", "run_full", "turn.interrupt", "--payload", '{"turnId":"turn_full"}', ...flags]),
      1,
      /^prp: store_full: sqlite:\S+\/store: the disk is full \(SQLITE_FULL: .*\); the command did not complete: SQLite needs free space/,
    );
    const revoked = prp(["authority", "revoke", "run_full", ...flags]);
    assert.equal(revoked.status, 0, revoked.stderr);
    assert.match(revoked.stdout, /revoked run_full: epoch 1/);

    daemon.kill("SIGTERM");
    assert.equal(await daemon.exited(), 0, daemon.stderr());
    // Without the daemon even a read must make the store's -shm file: on a full disk SQLite says an I/O error, the disk says why.
    fill(join(mount, "filler"));
    saidInOneLine(
      prp(["authority", "runs", ...flags]),
      1,
      /^prp: store_full: sqlite:\S+: the disk is full \(SQLITE_IOERR/,
    );
    rmSync(join(mount, "filler"));
    const runs = prp(["authority", "runs", "--json", ...flags]);
    assert.equal(runs.status, 0, runs.stderr);
    assert.match(runs.stdout, /"runId":"run_full".*"revocationEpoch":1/);
  });
});
