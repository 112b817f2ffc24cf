import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { protocolDir } from "../../src/contract/package-root.js";
import type { CommandReceipt, RunView } from "../../src/console/api-types.js";
import { ReplaySource } from "../../src/console/replay-source.js";
import type { RunSource } from "../../src/console/run-source.js";
import { ConsoleServer, type ConsoleOptions } from "../../src/console/server.js";
import { until } from "../support/until.js";

const TOKEN = "a".repeat(64);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw GET (or POST) with exactly these headers: fetch() would not let a test set Host. */
function send(
  server: ConsoleServer,
  path: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<Answer> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path, method, headers: { host: `127.0.0.1:${port}`, ...headers } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}
const bearer = { authorization: `Bearer ${TOKEN}` };

/** The replay fixture's run, for a console with no store. */
function replay(): ReplaySource {
  const opened = ReplaySource.open(join(protocolDir(), "fixtures", "replay", "happy-path.json"));
  assert.ok(opened.ok);
  return opened.value;
}

/**
 * The same run as a live source whose commands change at every read, without its terminal
 * event: every hub tick then pushes the run's view (bundle listing included) to its streams.
 */
function churningLiveSource(inner: ReplaySource): RunSource {
  let n = 0;
  return {
    live: true,
    runIds: () => inner.runIds(),
    eventsAfter: async (runId: string, after: number, limit: number) =>
      (await inner.eventsAfter(runId, after, limit))?.filter((e) => e.eventType !== "run.terminal"),
    origin: () => inner.origin(),
    commands: async (): Promise<CommandReceipt[]> => [
      { commandId: `command_${n++}`, controllerSeq: n, type: "run.cancel", status: null },
    ],
    queue: () => inner.queue(),
    close: async () => {},
  };
}

describe("the console's server: its token, headers, limits and bundle files, black-box", () => {
  let dir: string;
  let runId: string;
  const servers: ConsoleServer[] = [];
  const children: ChildProcess[] = [];
  const errors: Error[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-console-server-"));
    [runId] = (await replay().runIds()) as [string];
  });
  after(async () => {
    for (const child of children) child.kill("SIGKILL");
    for (const server of servers) await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const start = async (options: Partial<ConsoleOptions> = {}) => {
    const server = await ConsoleServer.start({
      source: replay(),
      host: "127.0.0.1",
      port: 0,
      token: TOKEN,
      onError: (err) => errors.push(err),
      ...options,
    });
    servers.push(server);
    return server;
  };

  it("the API needs Authorization: Bearer TOKEN (a cookie or ?token= is not it); the page's files need nothing; nothing redirects", async () => {
    const server = await start();
    const port = new URL(server.url).port;
    for (const headers of [
      {},
      { cookie: `prp_console_token=${TOKEN}` },
      { authorization: `Bearer ${"b".repeat(64)}` },
      { authorization: TOKEN },
    ] as Record<string, string>[]) {
      const refused = await send(server, "/api/runs", headers);
      assert.equal(refused.status, 401, JSON.stringify(headers));
      const { error } = JSON.parse(refused.body) as { error: { code: string; message: string } };
      assert.match(error.code, /^token_(missing|wrong)$/);
      assert.match(error.message, /access token/);
    }
    assert.equal(
      (await send(server, `/api/runs?token=${TOKEN}`)).status,
      401,
      "a token in the URL is not accepted by the API",
    );
    assert.equal((await send(server, "/api/runs", bearer)).status, 200);
    const page = await send(server, "/");
    assert.equal(page.status, 200);
    assert.match(page.body, /<div id="app">/);
    for (const path of [
      `/?token=${TOKEN}`,
      `//evil.example?token=${TOKEN}`,
      `//evil.example/?token=${TOKEN}`,
      "/\\evil.example",
      `/%2F%2Fevil.example?token=${TOKEN}`,
    ]) {
      const answer = await send(server, path);
      assert.equal(answer.headers.location, undefined, `${path} redirects nowhere`);
      assert.ok(answer.status < 300 || answer.status >= 400, `${path}: ${answer.status}`);
      assert.equal(answer.headers["set-cookie"], undefined, `${path} sets no cookie`);
    }
    assert.equal(
      (await send(server, "/api/runs", { ...bearer, host: `localhost:${port}` })).status,
      200,
      "localhost is this host too",
    );
  });

  it("every answer carries the CSP, frame and referrer headers; another Host (DNS rebinding) or another Origin is refused", async () => {
    const server = await start();
    const port = new URL(server.url).port;
    const answers = [
      await send(server, "/"),
      await send(server, "/api/runs"),
      await send(server, "/api/runs", bearer),
      await send(server, "/nope"),
      await send(server, "/", { host: "evil.example" }),
    ];
    for (const answer of answers) {
      assert.match(
        String(answer.headers["content-security-policy"]),
        /default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'.*frame-ancestors 'none'/,
      );
      assert.equal(answer.headers["x-frame-options"], "DENY");
      assert.equal(answer.headers["referrer-policy"], "no-referrer");
      assert.equal(answer.headers["x-content-type-options"], "nosniff");
    }
    for (const host of [
      "evil.example",
      `evil.example:${port}`,
      `127.0.0.1:${Number(port) + 1}`,
      `localhost.evil.example:${port}`,
    ]) {
      const refused = await send(server, "/api/runs", { ...bearer, host });
      assert.equal(refused.status, 421, host);
      assert.equal((JSON.parse(refused.body) as { error: { code: string } }).error.code, "host_refused");
    }
    for (const origin of [`http://127.0.0.1:${Number(port) + 1}`, "http://evil.example", "null"]) {
      const refused = await send(
        server,
        `/api/runs/${runId}/commands`,
        { ...bearer, origin, "content-type": "application/json" },
        "POST",
      );
      assert.equal(refused.status, 403, origin);
      assert.equal((JSON.parse(refused.body) as { error: { code: string } }).error.code, "origin_refused");
    }
    assert.equal(
      (await send(server, "/api/runs", { ...bearer, origin: `http://127.0.0.1:${port}` })).status,
      200,
      "its own origin",
    );
  });

  it("a symlinked run folder, bundle folder or file is neither listed nor served", async () => {
    const bundles = join(dir, "symlinked");
    const outside = join(dir, "outside");
    mkdirSync(join(outside, "bundle"), { recursive: true });
    writeFileSync(join(outside, "bundle", "secret.txt"), "not yours");
    writeFileSync(join(outside, "secret.txt"), "not yours");
    const server = await start({ bundlesDir: bundles });
    const shown = async () => {
      const view = JSON.parse((await send(server, `/api/runs/${runId}`, bearer)).body) as RunView;
      const file = await send(server, `/api/runs/${runId}/artifacts/secret.txt`, bearer);
      return { names: view.artifacts.map((a) => a.name), status: file.status, body: file.body };
    };
    mkdirSync(join(bundles, runId), { recursive: true });
    symlinkSync(join(outside, "bundle"), join(bundles, runId, "bundle"));
    assert.deepEqual((await shown()).names, [], "a symlinked bundle folder");
    assert.equal((await shown()).status, 404);
    rmSync(join(bundles, runId), { recursive: true });
    symlinkSync(outside, join(bundles, runId));
    assert.deepEqual((await shown()).names, [], "a symlinked run folder");
    assert.equal((await shown()).status, 404);
    rmSync(join(bundles, runId));
    mkdirSync(join(bundles, runId, "bundle"), { recursive: true });
    symlinkSync(join(outside, "secret.txt"), join(bundles, runId, "bundle", "secret.txt"));
    symlinkSync(outside, join(bundles, runId, "bundle", "folder"));
    writeFileSync(join(bundles, runId, "bundle", "own.txt"), "yours");
    assert.deepEqual((await shown()).names, ["own.txt"], "a symlinked file or subfolder");
    assert.equal((await shown()).status, 404);
    const own = await send(server, `/api/runs/${runId}/artifacts/own.txt`, bearer);
    assert.deepEqual([own.status, own.body], [200, "yours"]);
  });

  it("files churning in a bundle, swapped for folders while they are read, crash neither a download nor a run's stream", async () => {
    const bundles = join(dir, "churning");
    const bundle = join(bundles, runId, "bundle");
    mkdirSync(bundle, { recursive: true });
    const server = await start({ source: churningLiveSource(replay()), bundlesDir: bundles, pollMs: 5 });
    // Another process renames, removes and swaps the bundle's entries as fast as it can.
    const churn = spawn(
      process.execPath,
      [
        "-e",
        `const fs = require("node:fs"); const d = process.argv[1]; let i = 0;
         for (;;) { i++; const f = d + "/f" + (i % 20);
           try { fs.writeFileSync(f, "x".repeat(i % 5000)); fs.renameSync(f, f + "m"); fs.rmSync(f + "m"); } catch {}
           try { fs.rmSync(d + "/swap", { recursive: true, force: true }); if (i % 2) fs.writeFileSync(d + "/swap", "y".repeat(100000)); else fs.mkdirSync(d + "/swap"); } catch {} }`,
        bundle,
      ],
      { stdio: "ignore" },
    );
    children.push(churn);
    const stream = await fetch(`${server.url.replace(/\?.*$/, "")}api/runs/${runId}/stream`, { headers: bearer });
    assert.equal(stream.status, 200);
    const deadline = Date.now() + 3_000;
    const statuses = new Set<number>();
    while (Date.now() < deadline) {
      const batch = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          send(server, i % 2 ? `/api/runs/${runId}/artifacts/swap` : `/api/runs/${runId}`, bearer).then(
            (a) => a.status,
            () => 0, // a download ended midway by a failed read: that connection only
          ),
        ),
      );
      for (const status of batch) statuses.add(status);
    }
    churn.kill("SIGKILL");
    await stream.body?.cancel();
    assert.equal((await send(server, "/api/runs", bearer)).status, 200, "still answering");
    assert.ok(
      [...statuses].every((s) => [0, 200, 404].includes(s)),
      `statuses: ${[...statuses].join(", ")}`,
    );
  });

  it("caps its connections and closes silent ones soon; an event stream outlives the request timeout", async () => {
    const limits = { maxConnections: 4, requestTimeoutMs: 1_000, keepAliveTimeoutMs: 200, checkIntervalMs: 50 };
    const server = await start({ limits });
    const { port } = new URL(server.url);
    const sockets: Socket[] = [];
    const opened = Date.now();
    const closedAfter: number[] = [];
    for (let i = 0; i < 12; i++) {
      const socket = connect(Number(port), "127.0.0.1");
      socket.on("error", () => {});
      socket.on("close", () => closedAfter.push(Date.now() - opened));
      sockets.push(socket);
    }
    try {
      await until(
        () => closedAfter.length === 12,
        () => `the 12 silent sockets to be closed (${closedAfter.length} closed, after ${closedAfter.join(", ")} ms)`,
      );
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    // A socket the server accepted cannot be closed before the request timeout: those closed sooner were over the cap.
    assert.equal(
      closedAfter.filter((ms) => ms < limits.requestTimeoutMs).length,
      12 - limits.maxConnections,
      `closed after ${closedAfter.join(", ")} ms`,
    );
    assert.equal((await send(server, "/api/runs", bearer)).status, 200, "answering again");

    const stream = await fetch(`http://127.0.0.1:${port}/api/runs/stream`, { headers: bearer });
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("event: runs")) text += (await reader.read()).value ?? "";
    const quiet = Symbol("still open");
    const next = await Promise.race([
      reader.read().then(
        (r) => (r.done ? "ended" : "more"),
        (err: Error) => `cut: ${err.message}`,
      ),
      new Promise((r) => setTimeout(() => r(quiet), limits.requestTimeoutMs * 2)),
    ]);
    assert.equal(next, quiet, "the stream is not cut by the request timeout");
    await reader.cancel();
  });
});
