import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CONSOLE_LIMITS } from "../../src/console/server.js";
import {
  authorityFolder,
  killAll,
  runnerArgs,
  spawnRunnerd,
  startDaemon,
  type Child,
  type Daemon,
} from "../cli/authority-processes.js";
import { eventLines, judgeRun } from "../cli/authority-run.js";
import { adminJson, runPrp } from "../cli/run-cli.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";
import { startConsole, type ConsoleProcess } from "./console-process.js";

/** Whether a process with this pid is running (signal 0 checks without sending anything). */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A GET with the token; a connection the server drops is status 0. */
async function get(base: string, token: string, path: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(`${base}${path}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(5_000),
    });
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: "" };
  }
}

/**
 * A GET on a connection of its own (fetch would reuse a pooled keep-alive socket, one the server
 * already counts): what the server wrote back before it closed the socket, or after 5 s.
 */
const freshGet = (port: number, token: string, path: string) =>
  new Promise<string>((resolve) => {
    let got = "";
    const socket = connect(port, "127.0.0.1", () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      ),
    );
    const timer = setTimeout(() => socket.destroy(), 5_000);
    socket.on("data", (d: Buffer) => (got += d.toString()));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(got);
    });
  });

describe("prp authority serve --console survives silent sockets at its cap; a console survives files that cannot be read", () => {
  let dir: string;
  let store: string[];
  let daemon: Daemon | undefined;
  const children: Child[] = [];
  const sockets: Socket[] = [];
  before(async () => {
    ({ dir, store } = authorityFolder("prp-console-survives-"));
    daemon = await startDaemon([...store, "--console", "--poll-ms", "50"]);
    await until(() => daemon!.stdout().includes("console: "), "the daemon to print its console's address", 30_000);
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await killAll([...children, daemon]);
    rmSync(dir, { recursive: true, force: true });
  });

  /** Opens a socket that never sends a byte; resolves once connected, and records whether the server closed it. */
  const silent = (port: number) =>
    new Promise<{ socket: Socket; closed: () => boolean }>((resolve, reject) => {
      let closed = false;
      const socket = connect(port, "127.0.0.1", () => resolve({ socket, closed: () => closed }));
      socket.on("close", () => (closed = true));
      socket.on("error", (err) => (closed ? undefined : reject(err)));
      sockets.push(socket);
    });

  it("with the console's connections all held by silent sockets, a runner still connects to the daemon and finishes its run", async () => {
    const url = readFileSync(join(dir, "store", "console-url"), "utf8").trim();
    const { origin, port } = new URL(url);
    const token = new URL(url).searchParams.get("token")!;
    assert.match(await freshGet(Number(port), token, "/v1/runs"), /^HTTP\/1\.1 200 /, "the console answers before");

    // Up to the cap and past it: the server drops the ones past the cap.
    const cap = CONSOLE_LIMITS.maxConnections;
    const held: Array<{ socket: Socket; closed: () => boolean }> = [];
    for (let i = 0; i < cap + 16; i++) held.push(await silent(Number(port)));
    await until(
      () => held.filter((s) => !s.closed()).length <= cap,
      () => `the console to drop the sockets past its cap: ${held.filter((s) => !s.closed()).length} open`,
      30_000,
    );
    // Must-fail twin of "the sockets hold the cap": while they are held, a request gets no answer.
    assert.equal(await freshGet(Number(port), token, "/v1/runs"), "", "the console is full: a new request is dropped");

    // Meanwhile the daemon takes a runner and its run to the end.
    const created = adminJson(store, [
      "authority",
      "run",
      "create",
      "--json",
      "--script",
      "happy-path",
      "--prompt",
      "Play the scenario.",
    ]) as { runId: string; runnerArgs: string[] };
    const ticket = adminJson(store, ["authority", "ticket", created.runId, "--json"]) as { ticket: string };
    const runner = spawnRunnerd(
      [...runnerArgs(created, daemon!.url, join(dir, "runner")), "--delay-ms", "0", ...PATIENT_HARNESS],
      ticket.ticket,
      dir,
    );
    children.push(runner);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const events = eventLines(runPrp(["events", "--run", created.runId, "--json", ...store]).stdout);
    assert.deepEqual(
      judgeRun(events),
      { runTerminalState: "succeeded", problems: [] },
      `the run, as the store holds it: ${JSON.stringify(events.filter((e) => /failed|terminal/.test(e.eventType)))}`,
    );
    const row = runPrp(["authority", "runs", "--json", ...store])
      .stdout.split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { runId: string; terminal: boolean; pendingCommands: number })
      .find((r) => r.runId === created.runId);
    assert.deepEqual([row?.terminal, row?.pendingCommands], [true, 0]);
    assert.ok(alive(daemon!.pid), "the daemon process is alive");

    // The silent sockets let go (the test's, or the console's own request timeout): the console answers again.
    for (const s of held) s.socket.destroy();
    await until(
      async () => /^HTTP\/1\.1 200 /.test(await freshGet(Number(port), token, "/v1/runs")),
      "the console to answer again",
    );
    const runs = JSON.parse((await get(origin, token, "/v1/runs")).body) as { runs: Array<{ runId: string }> };
    assert.ok(runs.runs.some((r) => r.runId === created.runId));
    assert.ok(alive(daemon!.pid), "the daemon process is still alive");
  });

  it("bundle files replaced by a directory or a FIFO after their listing are not read, and the console goes on", async () => {
    // The daemon's --console serves no bundles (it has no --bundles-dir): prp console does, over the same store, beside it.
    const bundles = join(dir, "bundles");
    const created = adminJson(store, ["authority", "run", "create", "--json", "--script", "happy-path"]) as {
      runId: string;
    };
    const bundle = join(bundles, created.runId, "bundle");
    mkdirSync(bundle, { recursive: true });
    for (const name of ["report.txt", "trace.txt", "notes.txt"]) writeFileSync(join(bundle, name), `${name}\n`);
    const c: ConsoleProcess = await startConsole(["console", ...store, "--poll-ms", "50", "--bundles-dir", bundles]);
    children.push(c);
    const listing = JSON.parse((await get(c.base, c.token, `/bundles/${created.runId}`)).body) as {
      files: Array<{ name: string }>;
    };
    assert.deepEqual(
      listing.files.map((f) => f.name),
      ["notes.txt", "report.txt", "trace.txt"],
    );
    const file = (name: string) => get(c.base, c.token, `/bundles/${created.runId}/${name}`);
    // Must-fail twin: the same path, a regular file, is read.
    assert.deepEqual(await file("report.txt"), { status: 200, body: "report.txt\n" });

    // Replaced under the console: by a directory, and by a FIFO nobody writes (a blocking open would hang).
    rmSync(join(bundle, "report.txt"));
    mkdirSync(join(bundle, "report.txt"));
    rmSync(join(bundle, "trace.txt"));
    execFileSync("mkfifo", [join(bundle, "trace.txt")]);
    for (const name of ["report.txt", "trace.txt"])
      assert.equal((await file(name)).status, 404, `${name} can no longer be read as the listed file`);
    // Churn: the file comes and goes while it is asked for, many times.
    const churn = Array.from({ length: 50 }, async (_, i) => {
      if (i % 2 === 0) rmSync(join(bundle, "notes.txt"), { force: true, recursive: true });
      else writeFileSync(join(bundle, "notes.txt"), "again\n");
      return (await file("notes.txt")).status;
    });
    const statuses = await Promise.all(churn);
    assert.ok(
      statuses.every((s) => s === 200 || s === 404),
      `each answer is the file or not_found: ${statuses.join(",")}`,
    );

    assert.equal((await get(c.base, c.token, "/v1/runs")).status, 200, "the console still answers");
    assert.ok(alive(c.pid), "the console process is alive");
    assert.ok(alive(daemon!.pid), "the daemon process is alive");
  });
});
