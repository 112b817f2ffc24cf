/**
 * The client's event stream against a small SSE server started here, which cuts connections at
 * exact points, repeats a seq, or refuses: the one place a stand-in for the API is right, since
 * the real server cannot be told to misbehave on cue. The real server is tested through the
 * client in the API's own tests.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, it } from "node:test";
import { PrpApiError, PrpClient, type CommittedEvent, type ReconnectInfo } from "../../src/client/index.js";
import { within } from "../support/within.js";

const WAIT = 10_000;

interface Seen {
  url: string;
  lastEventId: string | undefined;
  authorization: string | undefined;
  accept: string | undefined;
}

type Handler = (req: IncomingMessage, res: ServerResponse, connection: number) => void;

interface TestServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

async function serve(handler: Handler): Promise<TestServer> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({
      url: req.url ?? "",
      lastEventId: req.headers["last-event-id"] as string | undefined,
      authorization: req.headers.authorization,
      accept: req.headers.accept,
    });
    handler(req, res, seen.length);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const envelope = (seq: number, eventType = "item.delta"): Record<string, unknown> => ({
  schema: "paperclip.prp.event.v3",
  sourceSeq: seq,
  eventType,
  payload: {},
});

function open(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
  res.write(": hello\n\n");
}
const send = (res: ServerResponse, seq: number, eventType?: string): boolean =>
  res.write(`id: ${seq}\nevent: prp\ndata: ${JSON.stringify(envelope(seq, eventType))}\n\n`);
const end = (res: ServerResponse): void => {
  res.write("event: end\ndata: {}\n\n");
  res.end();
};
/** Cuts the connection once everything written so far (and `partial`) has left: an exact cut point. */
const cut = (res: ServerResponse, partial = ""): void => {
  res.write(partial, () => res.destroy());
};
/** The seq a connection resumes after: Last-Event-ID, else `after`, else 0. */
function resumeFrom(req: IncomingMessage): number {
  const header = req.headers["last-event-id"];
  if (typeof header === "string") return Number(header);
  return Number(new URL(req.url ?? "/", "http://x").searchParams.get("after") ?? 0);
}

const client = (url: string): PrpClient => new PrpClient({ baseUrl: url, token: "secret-token" });
const fast = { initialDelayMs: 5, maxDelayMs: 20 };

async function collect(iterable: AsyncIterable<CommittedEvent>): Promise<number[]> {
  const seqs: number[] = [];
  for await (const event of iterable) {
    assert.equal((event.event as { sourceSeq?: number }).sourceSeq, event.seq);
    seqs.push(event.seq);
  }
  return seqs;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("PrpClient.follow", () => {
  it("resumes after cuts mid-stream with Last-Event-ID and receives every event exactly once", async () => {
    const TOTAL = 50;
    // Each connection sends a few events from where the client resumes, then is destroyed
    // mid-write (part of the next event on the wire); the last one ends properly.
    const cuts = [7, 19, 20, 33];
    const server = await serve((req, res, connection) => {
      const from = resumeFrom(req);
      open(res);
      const cutAt = cuts[connection - 1];
      for (let seq = from + 1; seq <= TOTAL; seq++) {
        if (cutAt !== undefined && seq > cutAt) {
          return cut(res, `id: ${seq}\nevent: prp\ndata: {"schema":"paperc`);
        }
        send(res, seq, seq === TOTAL ? "run.terminal" : undefined);
      }
      end(res);
    });
    const reconnects: ReconnectInfo[] = [];
    const seqs = await within(
      collect(client(server.url).follow("run 1", { ...fast, onReconnect: (info) => reconnects.push(info) })),
      WAIT,
      "the stream to end",
    );
    assert.deepEqual(seqs, range(1, TOTAL));
    assert.deepEqual(
      reconnects.map((r) => r.lastSeq),
      cuts,
    );
    assert.deepEqual(
      server.seen.map((s) => s.lastEventId),
      [undefined, "7", "19", "20", "33"],
    );
    assert.equal(server.seen[0]!.url, "/v1/runs/run%201/events");
    assert.equal(server.seen[0]!.authorization, "Bearer secret-token");
    assert.equal(server.seen[0]!.accept, "text/event-stream");
  });

  it("starts after `after`, and a connection that fails before any event is retried", async () => {
    const server = await serve((req, res, connection) => {
      if (connection === 1) {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: "unavailable", message: "starting" }));
        return;
      }
      open(res);
      for (let seq = resumeFrom(req) + 1; seq <= 5; seq++) send(res, seq, seq === 5 ? "run.terminal" : undefined);
      end(res);
    });
    const seqs = await within(collect(client(server.url).follow("r", { ...fast, after: 2 })), WAIT, "the stream");
    assert.deepEqual(seqs, [3, 4, 5]);
    assert.equal(server.seen[0]!.url, "/v1/runs/r/events?after=2");
    assert.equal(server.seen[1]!.lastEventId, "2");
  });

  it("a server that repeats a seq already sent is detected (must fail)", async () => {
    const server = await serve((req, res, connection) => {
      open(res);
      // After the cut, the server resumes one too early: seq 3 again.
      const from = connection === 1 ? 0 : resumeFrom(req) - 1;
      for (let seq = from + 1; seq <= 6; seq++) {
        send(res, seq);
        if (connection === 1 && seq === 3) return cut(res);
      }
      end(res);
    });
    const received: number[] = [];
    const error = await within(
      (async () => {
        try {
          for await (const event of client(server.url).follow("r", fast)) received.push(event.seq);
        } catch (caught) {
          return caught;
        }
        return undefined;
      })(),
      WAIT,
      "the duplicate to be refused",
    );
    assert.deepEqual(received, [1, 2, 3]);
    assert.ok(error instanceof PrpApiError, `not refused: ${String(error)}`);
    assert.equal(error.code, "stream_duplicate");
  });

  it("a seq out of order or after a gap within one connection is refused (must fail)", async () => {
    for (const [order, code] of [
      [[1, 2, 2], "stream_duplicate"],
      [[1, 3], "stream_gap"],
      [[2, 1], "stream_gap"],
    ] as const) {
      const server = await serve((_req, res) => {
        open(res);
        for (const seq of order) send(res, seq);
        end(res);
      });
      await within(
        assert.rejects(collect(client(server.url).follow("r", fast)), (e: unknown) => (e as PrpApiError).code === code),
        WAIT,
        `${order.join(",")} to be refused`,
      );
      await server.close();
    }
  });

  it("ends at `event: end` without reconnecting, and when closed right after run.terminal", async () => {
    const server = await serve((_req, res) => {
      open(res);
      send(res, 1);
      res.write("event: end\ndata: {}\n\n");
      // Keeps the connection open: the client must stop on `end`, not on the close.
    });
    assert.deepEqual(await within(collect(client(server.url).follow("r", fast)), WAIT, "the end"), [1]);
    assert.equal(server.seen.length, 1);

    const bare = await serve((_req, res) => {
      open(res);
      send(res, 1, "run.terminal");
      res.write("event: end\n\n"); // no data line: no event to an SSE parser
      res.end();
    });
    assert.deepEqual(await within(collect(client(bare.url).follow("r", fast)), WAIT, "the end"), [1]);
    assert.equal(bare.seen.length, 1);
  });

  it("an abort signal stops it, mid-stream and during a backoff", async () => {
    const server = await serve((_req, res) => {
      open(res);
      send(res, 1);
      send(res, 2);
      // Then silence, with the connection open.
    });
    const controller = new AbortController();
    const seqs: number[] = [];
    await within(
      (async () => {
        for await (const event of client(server.url).follow("r", { ...fast, signal: controller.signal })) {
          seqs.push(event.seq);
          if (event.seq === 2) setTimeout(() => controller.abort(), 10);
        }
      })(),
      WAIT,
      "the abort to stop the stream",
    );
    assert.deepEqual(seqs, [1, 2]);

    const down = await serve((_req, res) => res.destroy());
    const backoff = new AbortController();
    await within(
      collect(
        client(down.url).follow("r", {
          initialDelayMs: 60_000,
          maxDelayMs: 60_000,
          signal: backoff.signal,
          onReconnect: () => setTimeout(() => backoff.abort(), 10),
        }),
      ),
      WAIT,
      "the abort to cut the backoff short",
    );
  });

  it("a consumer that breaks out closes the connection", async () => {
    let closed: Promise<void> | undefined;
    const server = await serve((req, res) => {
      closed = new Promise((resolve) => req.socket.once("close", () => resolve()));
      open(res);
      for (let seq = 1; seq <= 3; seq++) send(res, seq);
    });
    for await (const event of client(server.url).follow("r", fast)) if (event.seq === 2) break;
    await within(closed!, WAIT, "the client to close its connection");
  });

  it("gives up after a bounded number of failures in a row, with growing delays", async () => {
    const server = await serve((_req, res) => res.destroy());
    const delays: number[] = [];
    const error = await within(
      collect(
        client(server.url).follow("r", {
          initialDelayMs: 2,
          maxDelayMs: 8,
          maxConsecutiveFailures: 4,
          onReconnect: (info) => delays.push(info.delayMs),
        }),
      ).catch((e: unknown) => e),
      WAIT,
      "the client to give up",
    );
    assert.ok(error instanceof PrpApiError);
    assert.equal(error.code, "stream_unavailable");
    assert.deepEqual(delays, [2, 4, 8]);
    assert.equal(server.seen.length, 4);
  });

  it("treats a silent connection as cut and resumes", async () => {
    const server = await serve((req, res, connection) => {
      open(res);
      if (connection === 1) return void send(res, 1); // then silence: no keep-alive
      for (let seq = resumeFrom(req) + 1; seq <= 2; seq++) send(res, seq, "run.terminal");
      end(res);
    });
    const seqs = await within(
      collect(client(server.url).follow("r", { ...fast, idleTimeoutMs: 100 })),
      WAIT,
      "the idle cut and resume",
    );
    assert.deepEqual(seqs, [1, 2]);
    assert.equal(server.seen[1]!.lastEventId, "1");
  });

  it("a refusal is a PrpApiError with the API's code, and is not retried", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: "unknown_run", message: "no run r", path: "/runId" }));
    });
    const error = await within(
      collect(client(server.url).follow("r", fast)).catch((e: unknown) => e),
      WAIT,
      "the refusal",
    );
    assert.ok(error instanceof PrpApiError);
    assert.deepEqual([error.status, error.code, error.message, error.path], [404, "unknown_run", "no run r", "/runId"]);
    assert.equal(server.seen.length, 1);
  });
});

describe("PrpClient requests", () => {
  it("send the token, the idempotency key and JSON, and return the parsed body", async () => {
    const bodies: string[] = [];
    const server = await serve((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        bodies.push(`${req.method} ${req.url} ${req.headers["idempotency-key"] ?? "-"} ${body}`);
        res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: true }));
      });
    });
    const c = client(server.url + "/");
    await c.createRun({ agent: { kind: "fake", script: "hello" } }, { idempotencyKey: "k1" });
    await c.listRuns({ state: "running", labels: { team: "blue", env: "ci" }, limit: 5 });
    await c.events("r/1", { after: 3 });
    await c.sendCommand("r", { type: "run.cancel", payload: {} });
    await c.createTicket("r");
    assert.deepEqual(bodies, [
      'POST /v1/runs k1 {"agent":{"kind":"fake","script":"hello"}}',
      "GET /v1/runs?state=running&label=team%3Ablue&label=env%3Aci&limit=5 - ",
      "GET /v1/runs/r%2F1/events?after=3 - ",
      'POST /v1/runs/r/commands - {"type":"run.cancel","payload":{}}',
      "POST /v1/runs/r/tickets - {}",
    ]);
    assert.ok(server.seen.every((s) => s.authorization === "Bearer secret-token"));
  });

  it("allRuns follows the cursor through every page", async () => {
    const server = await serve((req, res) => {
      const after = new URL(req.url ?? "/", "http://x").searchParams.get("after");
      const page =
        after === null
          ? { runs: [{ runId: "a" }, { runId: "b" }], next: "c1" }
          : after === "c1"
            ? { runs: [{ runId: "c" }], next: "c2" }
            : { runs: [], next: null };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(page));
    });
    const ids: string[] = [];
    for await (const run of client(server.url).allRuns({ text: "x" })) ids.push(run.runId);
    assert.deepEqual(ids, ["a", "b", "c"]);
    assert.equal(server.seen.length, 3);
  });

  it("errors become PrpApiError: a JSON refusal, a body that is not JSON, no server (must fail)", async () => {
    const server = await serve((req, res) => {
      if (req.url === "/v1/runs/gone") {
        res.writeHead(409, { "content-type": "application/json" });
        return void res.end(JSON.stringify({ code: "run_ended", message: "the run has ended" }));
      }
      res.writeHead(req.url === "/v1/runs/html" ? 502 : 200, { "content-type": "text/html" });
      res.end("<html>");
    });
    const c = client(server.url);
    await assert.rejects(c.getRun("gone"), (e: unknown) => {
      assert.ok(e instanceof PrpApiError);
      assert.deepEqual([e.status, e.code, e.message, e.path], [409, "run_ended", "the run has ended", undefined]);
      return true;
    });
    await assert.rejects(c.getRun("html"), (e: unknown) => (e as PrpApiError).code === "http_502");
    await assert.rejects(c.getRun("ok"), (e: unknown) => (e as PrpApiError).code === "invalid_response");
    const url = server.url;
    await server.close();
    await assert.rejects(client(url).getRun("x"), (e: unknown) => {
      assert.ok(e instanceof PrpApiError);
      return e.status === 0 && e.code === "network_error";
    });
  });
});
