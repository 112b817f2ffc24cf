import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { protocolDir } from "../../src/contract/package-root.js";
import { ReplaySource } from "../../src/console/replay-source.js";
import { ConsoleServer, type ConsoleOptions } from "../../src/console/server.js";
import { replayFixture } from "../../src/reducer/index.js";
import { readFileSync } from "node:fs";
import { responseChecker } from "../support/openapi-responses.js";
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

const fixturePath = () => join(protocolDir(), "fixtures", "replay", "happy-path.json");

/**
 * The same run without its run.terminal (an NDJSON transcript in `dir`): a run whose event
 * stream stays open, as a live run's does.
 */
function unendedReplay(dir: string): ReplaySource {
  const fixture = replayFixture(readFileSync(fixturePath()));
  assert.ok(fixture.ok);
  const path = join(dir, `unended-${Math.random().toString(36).slice(2)}.ndjson`);
  writeFileSync(
    path,
    fixture.events
      .filter((e) => e.eventType !== "run.terminal")
      .map((e) => JSON.stringify(e))
      .join("\n"),
  );
  const opened = ReplaySource.open(path);
  assert.ok(opened.ok, JSON.stringify(opened));
  return opened.value;
}

/** Reads an event stream until the frame with id `id` has come whole. */
async function readUntil(reader: ReadableStreamDefaultReader<string>, id: number): Promise<void> {
  let seen = "";
  while (!(seen.includes(`id: ${id}\n`) && seen.endsWith("\n\n"))) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before event ${id}: ${seen}`);
    seen += value;
  }
}

describe("the console's server: its token, headers, limits and bundle files, black-box", () => {
  let dir: string;
  let runId: string;
  const servers: ConsoleServer[] = [];
  const children: ChildProcess[] = [];
  const errors: Error[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-console-server-"));
    runId = (await replay().store.listRuns({ limit: 10 })).runs[0]!.runId;
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

  it("answers no /api/ route any more (404); its /v1 answers are the public API's, as the OpenAPI document says", async () => {
    const server = await start();
    for (const path of ["/api/runs", `/api/runs/${runId}`, "/api/runs/stream", `/api/runs/${runId}/stream`]) {
      const answer = await send(server, path, bearer);
      assert.equal(answer.status, 404, path);
    }
    const refusedPost = await send(
      server,
      `/api/runs/${runId}/commands`,
      { ...bearer, "content-type": "application/json" },
      "POST",
    );
    assert.ok([404, 405].includes(refusedPost.status), `POST /api/…/commands: ${refusedPost.status}`);
    const openApi = responseChecker();
    for (const path of [
      "/v1/runs",
      `/v1/runs/${runId}`,
      `/v1/runs/${runId}?upto=2`,
      `/v1/runs/${runId}/events`,
      `/v1/runs/${runId}/events?after=3&limit=2`,
      "/v1/runs/run_nobody",
    ]) {
      const answer = await send(server, path, bearer);
      openApi.checkResponse("GET", path, answer.status, JSON.parse(answer.body));
    }
    const unauthorized = await send(server, "/v1/runs");
    openApi.checkResponse("GET", "/v1/runs", unauthorized.status, JSON.parse(unauthorized.body));
    const command = await fetch(`${server.url.replace(/\?.*$/, "")}v1/runs/${runId}/commands`, {
      method: "POST",
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ type: "run.cancel", payload: {} }),
    });
    const refused = (await command.json()) as { code: string };
    openApi.checkResponse("POST", `/v1/runs/${runId}/commands`, command.status, refused);
    assert.deepEqual([command.status, refused.code], [409, "replay_read_only"], "a replay takes no command");
    const document = await send(server, "/v1/openapi.json", bearer);
    assert.equal(document.status, 200);
  });

  it("the API needs Authorization: Bearer TOKEN (a cookie or ?token= is not it); the page's files need nothing; nothing redirects", async () => {
    const server = await start();
    const port = new URL(server.url).port;
    for (const headers of [
      {},
      { cookie: `prp_console_token=${TOKEN}` },
      { authorization: `Bearer ${"b".repeat(64)}` },
      { authorization: TOKEN },
    ] as Record<string, string>[]) {
      const refused = await send(server, "/v1/runs", headers);
      assert.equal(refused.status, 401, JSON.stringify(headers));
      const error = JSON.parse(refused.body) as { code: string; message: string };
      assert.match(error.code, /^token_(missing|invalid)$/);
      assert.match(error.message, /access token/);
    }
    assert.equal(
      (await send(server, `/v1/runs?token=${TOKEN}`)).status,
      401,
      "a token in the URL is not accepted by the API",
    );
    assert.equal((await send(server, "/v1/runs", bearer)).status, 200);
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
      (await send(server, "/v1/runs", { ...bearer, host: `localhost:${port}` })).status,
      200,
      "localhost is this host too",
    );
  });

  it("every answer carries the CSP, frame and referrer headers; another Host (DNS rebinding) or another Origin is refused", async () => {
    const server = await start();
    const port = new URL(server.url).port;
    const answers = [
      await send(server, "/"),
      await send(server, "/v1/runs"),
      await send(server, "/v1/runs", bearer),
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
      const refused = await send(server, "/v1/runs", { ...bearer, host });
      assert.equal(refused.status, 421, host);
      assert.equal((JSON.parse(refused.body) as { code: string }).code, "host_refused");
    }
    for (const origin of [`http://127.0.0.1:${Number(port) + 1}`, "http://evil.example", "null"]) {
      const refused = await send(
        server,
        `/v1/runs/${runId}/commands`,
        { ...bearer, origin, "content-type": "application/json" },
        "POST",
      );
      assert.equal(refused.status, 403, origin);
      assert.equal((JSON.parse(refused.body) as { code: string }).code, "origin_refused");
    }
    assert.equal(
      (await send(server, "/v1/runs", { ...bearer, origin: `http://127.0.0.1:${port}` })).status,
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
      const listing = JSON.parse((await send(server, `/bundles/${runId}`, bearer)).body) as {
        files: Array<{ name: string }>;
      };
      const file = await send(server, `/bundles/${runId}/secret.txt`, bearer);
      return { names: listing.files.map((a) => a.name), status: file.status, body: file.body };
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
    const own = await send(server, `/bundles/${runId}/own.txt`, bearer);
    assert.deepEqual([own.status, own.body], [200, "yours"]);
  });

  it("files churning in a bundle, swapped for folders while they are read, crash neither a download nor a run's stream", async () => {
    const bundles = join(dir, "churning");
    const bundle = join(bundles, runId, "bundle");
    mkdirSync(bundle, { recursive: true });
    const server = await start({ source: unendedReplay(dir), bundlesDir: bundles, pollMs: 5 });
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
    const stream = await fetch(`${server.url.replace(/\?.*$/, "")}v1/runs/${runId}/events`, {
      headers: { ...bearer, accept: "text/event-stream" },
    });
    assert.equal(stream.status, 200);
    const deadline = Date.now() + 3_000;
    const statuses = new Set<number>();
    while (Date.now() < deadline) {
      const batch = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          send(
            server,
            i % 2 ? `/bundles/${runId}/swap` : i % 4 ? `/bundles/${runId}` : `/v1/runs/${runId}`,
            bearer,
          ).then(
            (a) => a.status,
            () => 0, // a download ended midway by a failed read: that connection only
          ),
        ),
      );
      for (const status of batch) statuses.add(status);
    }
    churn.kill("SIGKILL");
    await stream.body?.cancel();
    assert.equal((await send(server, "/v1/runs", bearer)).status, 200, "still answering");
    assert.ok(
      [...statuses].every((s) => [0, 200, 404].includes(s)),
      `statuses: ${[...statuses].join(", ")}`,
    );
  });

  it("caps its connections and closes silent ones soon; an event stream outlives the request timeout", async () => {
    const limits = { maxConnections: 4, requestTimeoutMs: 1_000, keepAliveTimeoutMs: 200, checkIntervalMs: 50 };
    const source = unendedReplay(dir);
    const events = (await source.store.run(runId))!.ackedSourceSeq;
    const server = await start({ limits, source });
    const { port } = new URL(server.url);
    const sockets: Socket[] = [];
    const opened = Date.now();
    const closedAfter: number[] = [];
    // One after another, each connected (or already dropped) before the next: the cap is what is judged, not a burst.
    for (let i = 0; i < 12; i++) {
      const socket = connect(Number(port), "127.0.0.1");
      socket.on("error", () => {});
      socket.on("close", () => closedAfter.push(Date.now() - opened));
      sockets.push(socket);
      await new Promise<void>((resolve) => {
        socket.once("connect", () => resolve());
        socket.once("close", () => resolve());
      });
    }
    try {
      // The sockets over the cap are dropped at once; the port answers again once the silent ones
      // it took are closed. Judged by a new request, not by every client socket closing: one the
      // kernel queued but the server never took may stay open, holding nothing of the server's.
      await until(
        async () =>
          closedAfter.filter((ms) => ms < limits.requestTimeoutMs).length === 12 - limits.maxConnections &&
          (await send(server, "/v1/runs", bearer).then(
            (a) => a.status === 200,
            () => false,
          )),
        () => `the port to answer again (${closedAfter.length} sockets closed, after ${closedAfter.join(", ")} ms)`,
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

    const stream = await fetch(`http://127.0.0.1:${port}/v1/runs/${runId}/events`, {
      headers: { ...bearer, accept: "text/event-stream" },
    });
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    await readUntil(reader, events);
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
